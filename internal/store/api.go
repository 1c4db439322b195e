// Package store keeps recorded samples in one SQLite file: a series table and
// a chunk table whose chunks hold ~2 h of one series, Gorilla/XOR-encoded
// with Prometheus' tsdb/chunkenc. The format is documented in
// docs/store-format.md.
package store

// TEMPORARY: the API to implement (see the helper brief). Delete this file
// once every declaration lives in its own file.

import (
	"errors"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

var errTODO = errors.New("not implemented")

// Options configure a store.
type Options struct {
	// ReadOnly opens an existing store for queries only (diagnose, export).
	ReadOnly bool
	// ChunkRange is the time span of a chunk (default 2 h).
	ChunkRange time.Duration
}

// Store is an open store file. Safe for concurrent use: one writer (the
// recorder) and any number of readers, also from other processes.
type Store struct{}

// Open opens or creates a store file.
func Open(path string, opt Options) (*Store, error) { return nil, errTODO }

// Close flushes and closes the store.
func (s *Store) Close() error { return errTODO }

// Append stores scrapes of one instance, in one transaction: when it
// returns nil the samples survive a crash or kill -9. Scrapes must be in
// time order per instance; a scrape older than the newest stored one is
// rejected with ErrOutOfOrder.
func (s *Store) Append(instance string, scrapes ...*sample.Scrape) error { return errTODO }

// ErrOutOfOrder is returned for samples older than what is stored.
var ErrOutOfOrder = errors.New("sample out of order")

// ErrCorrupt is wrapped when the file is not a readable store.
var ErrCorrupt = errors.New("store damaged")

// Instances lists the instances in the store.
func (s *Store) Instances() ([]string, error) { return nil, errTODO }

// TimeRange returns the first and last sample time of an instance.
func (s *Store) TimeRange(instance string) (from, to time.Time, err error) {
	return time.Time{}, time.Time{}, errTODO
}

// Query selects series.
type Query struct {
	Instance string
	// Names lists metric names to read; empty means all.
	Names []string
	// Match are label name, value pairs every series must have.
	Match []string
	From  time.Time
	To    time.Time
	// Step > 0 aggregates raw samples into steps aligned on From:
	// Points[i] is the last raw sample of step i (its own timestamp), Max,
	// Min, Mean the step's aggregates. 0 returns raw samples.
	Step time.Duration
}

// Select reads series.
func (s *Store) Select(q Query) ([]*sample.Series, error) { return nil, errTODO }

// Latest returns the newest value of every series of an instance at or
// before t (zero t: the newest), as one scrape stamped with the newest
// sample time. Series whose newest sample is older than maxAge before that
// time are left out (vanished processes).
func (s *Store) Latest(instance string, t time.Time, maxAge time.Duration) (*sample.Scrape, error) {
	return nil, errTODO
}

// DeleteBefore removes every chunk that ends before t (retention).
func (s *Store) DeleteBefore(t time.Time) (int, error) { return 0, errTODO }

// Stats describes the store's size.
type Stats struct {
	Series      int
	Samples     int64
	FileBytes   int64
	ChunkBytes  int64
	HeadSamples int64
}

// Stats measures the store.
func (s *Store) Stats() (Stats, error) { return Stats{}, errTODO }

// ExportOpenMetrics writes every selected series as OpenMetrics text with
// timestamps (seconds), accepted by `promtool tsdb create-blocks-from
// openmetrics`. The instance becomes an "instance" label.
func (s *Store) ExportOpenMetrics(w io.Writer, q Query) error { return errTODO }

// ExportParquet writes every selected sample as rows (instance, name,
// labels, timestamp, value) of a Parquet file.
func (s *Store) ExportParquet(w io.Writer, q Query) error { return errTODO }
