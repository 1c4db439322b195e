// Package source turns saved memory data into samples in a store, so that
// diagnosis never knows where the data came from. It reads:
//
//   - a memdoctor store file (SQLite), opened as it is;
//   - a directory of cron-saved /proc files named <kind>_<YYYY-MM-DD>.<HH:MM>
//     (seconds optional), flat or one level down in per-day directories,
//     optionally gzip-compressed (see [KindCron]);
//   - a directory of capture archives (*.txtar written by memdoctor capture,
//     optionally .txtar.gz), a single archive, or an unpacked capture
//     directory (see [KindCaptures]);
//   - a Prometheus text exposition or OpenMetrics file with timestamps, for
//     any number of instances, optionally gzip-compressed (see
//     [KindOpenMetrics]).
//
// Cron files and captures go through collect.Collect exactly as a live host
// would, so every source yields the same series names.
package source

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/safeio"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

// Kind is the kind of a source.
type Kind int

// Kinds of sources.
const (
	KindUnknown Kind = iota
	// KindStore is a memdoctor store file (SQLite).
	KindStore
	// KindCron is a directory of cron-saved /proc files: files named
	// <kind>_<YYYY-MM-DD>.<HH:MM> or <kind>_<YYYY-MM-DD>.<HH:MM:SS>, an
	// optional ".gz" suffix, directly in the directory or one level down
	// (per-day directories). Kinds: meminfo (required per timestamp),
	// slabinfo, cgroups, vmstat, zoneinfo, stat, buddyinfo,
	// pressure_memory (or pressure), osrelease (the kernel release, as
	// /proc/sys/kernel/osrelease) and version (a copy of /proc/version).
	KindCron
	// KindCaptures is one capture archive, a directory of them, or a
	// directory unpacked by memdoctor capture.
	KindCaptures
	// KindOpenMetrics is a Prometheus text exposition or OpenMetrics file.
	KindOpenMetrics
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindStore:
		return "store"
	case KindCron:
		return "cron directory"
	case KindCaptures:
		return "captures"
	case KindOpenMetrics:
		return "openmetrics"
	}
	return "unknown"
}

// Accepted describes what Detect accepts, for error messages and help.
const Accepted = "a memdoctor store file, a directory of cron-saved /proc files " +
	"(meminfo_YYYY-MM-DD.HH:MM, ...), a capture archive or a directory of them (*.txtar), " +
	"or a Prometheus/OpenMetrics text file with timestamps (optionally .gz)"

// ErrUnknownFormat is matched by Detect's error for input it does not
// recognise.
var ErrUnknownFormat = errors.New("unrecognised input")

// ErrMalformed is matched by every error about malformed input content, from
// this package or from the kernel-file parsers.
var ErrMalformed = procfs.ErrMalformed

// InputError is malformed input: the file, the line (0 when about the whole
// file) and the reason.
type InputError struct {
	File string
	Line int
	Err  error
}

// Error formats "file: line N: reason".
func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the reason.
func (e *InputError) Unwrap() error { return e.Err }

func malformed(file string, line int, format string, args ...any) *InputError {
	return &InputError{File: file, Line: line, Err: fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)}
}

// IngestOptions tune reading a source. The zero value is ready to use.
type IngestOptions struct {
	// Instance names the instance of data that carries none: every snapshot of
	// a cron directory or of captures (default: the captured hostname, else
	// the directory or file name), and text series without an "instance"
	// label (default: the file name without extensions).
	Instance string
	// Location is the time zone of cron file names (default UTC).
	Location *time.Location
	// Top is how many processes and memory cgroups are collected from each
	// capture (default 10; negative: none). Cron files have neither.
	Top int
	// Kernel is the kernel release to assume for cron files when the
	// directory has no osrelease or version files.
	Kernel string
	// Lenient skips malformed text lines and malformed or truncated cron
	// files and captures, counting them in a note, instead of failing.
	Lenient bool
	// BufferSamples bounds, roughly, how many text samples are held before
	// the complete snapshots of time-ordered instances are written out
	// (default 4 Mi samples, about 64 MiB). Input that is not in time order
	// per instance (a dump grouped by series) is held, up to MaxHeldSamples.
	BufferSamples int
	// MaxHeldSamples bounds the text samples held at once, whatever the
	// input's order (default 32 Mi samples, about 384 MiB): input that is
	// not in time order per instance past this many distinct samples fails,
	// saying so. Samples repeating a series at the same time are dropped as
	// they are read and never count.
	MaxHeldSamples int
	// MaxSeries bounds the distinct series of a text file (default 1 Mi,
	// about 700 MiB to hold): past it the file fails, saying so.
	MaxSeries int
	// BatchSamples is roughly how many samples go into one store append
	// (one transaction; default 200 000).
	BatchSamples int
	// Workers is how many cron timestamps or captures are collected in
	// parallel (default GOMAXPROCS).
	Workers int
	// Progress, when set, is called with the work done and the total (bytes
	// for a text file, timestamps for a cron directory, archives for
	// captures), at most about ten times a second, and once at the end
	// with done == total.
	Progress func(done, total int64)
}

func (o IngestOptions) withDefaults() IngestOptions {
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Top == 0 {
		o.Top = 10
	}
	if o.Top < 0 {
		o.Top = 0
	}
	if o.BufferSamples <= 0 {
		o.BufferSamples = 4 << 20
	}
	if o.MaxHeldSamples <= 0 {
		o.MaxHeldSamples = 32 << 20
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = 1 << 20
	}
	if o.BatchSamples <= 0 {
		o.BatchSamples = 200_000
	}
	return o
}

// IngestStats describe what a source held.
type IngestStats struct {
	Kind Kind
	// Snapshots and Samples written.
	Snapshots int
	Samples   int64
	// Instances written, sorted.
	Instances []string
	// From and To are the first and last snapshot time written.
	From, To time.Time
	// Skipped counts what was left out: cron timestamps without meminfo,
	// malformed lines or files in lenient mode, duplicate samples.
	Skipped int
	// Notes say what was missing or odd, one per distinct message with
	// its count.
	Notes []sample.Note
	// Duration is the wall time of the ingest.
	Duration time.Duration
}

// Sink receives snapshots of one instance, in time order per instance (each
// call continues where the previous call for that instance stopped). The
// snapshots' label sets may be shared between snapshots: treat them as read-only.
type Sink func(instance string, snapshots []*sample.Snapshot) error

// Detect says what kind of source path is. It fails, naming what is
// accepted, for anything else.
func Detect(path string) (Kind, error) {
	st, err := os.Stat(path)
	if err != nil {
		return KindUnknown, err
	}
	if st.IsDir() {
		return detectDir(path)
	}
	head, err := readHead(path, 16)
	if err != nil {
		return KindUnknown, err
	}
	if string(head) == sqliteMagic {
		return KindStore, nil
	}
	if isCaptureFile(path) {
		return KindCaptures, nil
	}
	if err := sniffText(path); err != nil {
		return KindUnknown, fmt.Errorf("%s: %w: want %s (%w)", path, ErrUnknownFormat, Accepted, err)
	}
	return KindOpenMetrics, nil
}

const sqliteMagic = "SQLite format 3\x00"

func detectDir(dir string) (Kind, error) {
	sc, err := scanCronDir(dir, time.UTC)
	if err != nil {
		return KindUnknown, err
	}
	cron := len(sc.groups) > 0 || len(sc.bad) > 0 // a bad name is reported by Read
	caps, err := findCaptures(dir)
	if err != nil {
		return KindUnknown, err
	}
	switch {
	case cron && len(caps) > 0:
		return KindUnknown, fmt.Errorf("%s: holds both cron-saved /proc files and capture archives: put them in separate directories", dir)
	case cron:
		return KindCron, nil
	case len(caps) > 0:
		return KindCaptures, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "memdoctor", "provenance")); err == nil {
		return KindCaptures, nil
	}
	return KindUnknown, fmt.Errorf("%s: %w: a directory without cron-saved /proc files or capture archives; want %s",
		dir, ErrUnknownFormat, Accepted)
}

// Read reads a source of any kind but a store and hands its snapshots to
// sink, in time order per instance.
func Read(path string, opt IngestOptions, sink Sink) (IngestStats, error) {
	return readInto(path, opt, oneByOne(sink))
}

func read(path string, kind Kind, opt IngestOptions, sink batchSink) (IngestStats, error) {
	start := time.Now()
	var err error
	opt = opt.withDefaults()
	w := newWriter(sink, opt)
	switch kind {
	case KindCron:
		err = readCron(path, opt, w)
	case KindCaptures:
		err = readCaptures(path, opt, w)
	case KindOpenMetrics:
		err = readText(path, opt, w)
	case KindStore:
		err = fmt.Errorf("%s is a memdoctor store already: open it with store.Open", path)
	}
	if err == nil {
		err = w.flush()
	}
	stats := w.stats(kind)
	stats.Duration = time.Since(start)
	return stats, err
}

// Ingest reads a source into st (see Read). A store file cannot be
// ingested: open it instead (OpenStore does).
func Ingest(path string, st *store.Store, opt IngestOptions) (IngestStats, error) {
	return readInto(path, opt, appendTo(st))
}

func readInto(path string, opt IngestOptions, sink batchSink) (IngestStats, error) {
	kind, err := Detect(path)
	if err != nil {
		return IngestStats{}, err
	}
	return read(path, kind, opt, sink)
}

// batchSink receives the snapshots of several instances at once: one store
// transaction for many instances.
type batchSink func(batches []store.Batch) error

// appendTo writes batches into st, one transaction each.
func appendTo(st *store.Store) batchSink { return st.AppendBatch }

// oneByOne hands batches to a Sink one instance at a time.
func oneByOne(sink Sink) batchSink {
	return func(batches []store.Batch) error {
		for i, b := range batches {
			if err := sink(b.Instance, b.Snapshots); err != nil {
				return &store.BatchError{Index: i, Err: err}
			}
		}
		return nil
	}
}

// OpenStore opens path for reading as a store: a store file read-only (its
// stats then hold only the kind, instances and time range), any other
// source ingested into a temporary store in os.TempDir. cleanup closes the
// store and removes the temporary one; it is never nil and may be called
// more than once.
func OpenStore(path string, opt ...IngestOptions) (st *store.Store, cleanup func(), stats IngestStats, err error) {
	var o IngestOptions
	if len(opt) > 0 {
		o = opt[0]
	}
	cleanup = func() {}
	kind, err := Detect(path)
	if err != nil {
		return nil, cleanup, IngestStats{}, err
	}
	if kind == KindStore {
		start := time.Now()
		st, err = store.Open(path, store.Options{ReadOnly: true})
		if err != nil {
			return nil, cleanup, IngestStats{}, fmt.Errorf("open store %s: %w", path, err)
		}
		stats = IngestStats{Kind: KindStore}
		// --lenient reads past a damaged chunk (the check below notes it)
		// rather than failing the query that meets it.
		st.SkipDamaged(o.Lenient)
		// A query reads only the series and range it asks for, so damage
		// elsewhere in the file would go unseen: every reader checks every
		// page first (about the cost of reading the file once). Damage is an
		// error, or with Lenient a note, and the readable rest is used.
		if err := st.QuickCheck(); err != nil {
			if !o.Lenient || !errors.Is(err, store.ErrCorrupt) {
				_ = st.Close() // the check's error is the one to report
				return nil, cleanup, IngestStats{}, err
			}
			stats.Notes = append(stats.Notes, sample.Note{Source: path, Message: err.Error(),
				Hides: "the samples on the damaged pages (a query over them still fails)", Fix: "recover the file as the message says"})
		}
		if stats.Instances, err = st.Instances(); err != nil {
			_ = st.Close() // the read error is the one to report
			return nil, cleanup, IngestStats{}, fmt.Errorf("open store %s: %w", path, err)
		}
		for _, in := range stats.Instances {
			from, to, err := st.TimeRange(in)
			if errors.Is(err, store.ErrNoData) {
				continue // an instance without samples has no range
			}
			if err != nil {
				if !o.Lenient {
					_ = st.Close() // the read error is the one to report
					return nil, cleanup, IngestStats{}, fmt.Errorf("open store %s: instance %s: %w", path, in, err)
				}
				stats.Notes = append(stats.Notes, sample.Note{Source: path, Message: fmt.Sprintf("instance %s: time range unreadable: %v", in, err)})
				continue
			}
			if stats.From.IsZero() || from.Before(stats.From) {
				stats.From = from
			}
			if to.After(stats.To) {
				stats.To = to
			}
		}
		stats.Duration = time.Since(start)
		return st, onceFunc(func() { _ = st.Close() }), stats, nil
	}
	dir, err := os.MkdirTemp("", "memdoctor-ingest-")
	if err != nil {
		return nil, cleanup, IngestStats{}, err
	}
	st, err = store.Open(filepath.Join(dir, "ingest.db"), store.Options{})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, cleanup, IngestStats{}, fmt.Errorf("temporary store: %w", err)
	}
	cleanup = onceFunc(func() {
		_ = st.Close() // read-only use: nothing to lose
		_ = os.RemoveAll(dir)
	})
	stats, err = read(path, kind, o, appendTo(st))
	if err != nil {
		cleanup()
		return nil, func() {}, stats, err
	}
	st.Seal() // only this process had it, and it is written
	return st, cleanup, stats, nil
}

func defaultWorkers() int { return runtime.GOMAXPROCS(0) }

func onceFunc(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

// writer forwards snapshots to a sink, several instances at a time (about
// BatchSamples samples a call), and keeps the statistics.
type writer struct {
	sink      batchSink
	opt       IngestOptions
	pending   []store.Batch
	npend     int
	snapshots int
	samples   int64
	insts     map[string]bool
	from      time.Time
	to        time.Time
	skipped   int
	notes     noteSet
}

func newWriter(sink batchSink, opt IngestOptions) *writer {
	return &writer{sink: sink, opt: opt, insts: map[string]bool{}}
}

// write queues snapshots of one instance, in time order after the ones
// queued before for it; the caller must not change them afterwards.
func (w *writer) write(instance string, snapshots []*sample.Snapshot) error {
	if len(snapshots) == 0 {
		return nil
	}
	for _, s := range snapshots {
		s.Instance = instance
		w.npend += len(s.Metrics)
	}
	w.pending = append(w.pending, store.Batch{Instance: instance, Snapshots: snapshots})
	if w.npend >= w.opt.BatchSamples {
		return w.flush()
	}
	return nil
}

// flush hands the queued snapshots to the sink.
func (w *writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	batches := w.pending
	w.pending, w.npend = nil, 0
	if err := w.sink(batches); err != nil {
		var be *store.BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(batches) {
			b := batches[be.Index]
			return fmt.Errorf("writing %d snapshots of %s from %s: %w", len(b.Snapshots), b.Instance,
				b.Snapshots[0].Time.UTC().Format(time.RFC3339), be.Err)
		}
		return fmt.Errorf("writing snapshots of %d instances: %w", len(batches), err)
	}
	for _, b := range batches {
		w.insts[b.Instance] = true
		for _, s := range b.Snapshots {
			w.snapshots++
			w.samples += int64(len(s.Metrics))
			if w.from.IsZero() || s.Time.Before(w.from) {
				w.from = s.Time
			}
			if s.Time.After(w.to) {
				w.to = s.Time
			}
		}
	}
	return nil
}

func (w *writer) stats(kind Kind) IngestStats {
	st := IngestStats{Kind: kind, Snapshots: w.snapshots, Samples: w.samples, From: w.from, To: w.to,
		Skipped: w.skipped, Notes: w.notes.list()}
	for in := range w.insts {
		st.Instances = append(st.Instances, in)
	}
	slices.Sort(st.Instances)
	return st
}

// noteSet aggregates notes: one per distinct note, with a count.
type noteSet struct {
	order []sample.Note
	count map[sample.Note]int
	of    map[sample.Note]int // out of how many (0: no denominator)
}

func (s *noteSet) add(n sample.Note) { s.addOf(n, 0) }

// addOf counts a note seen in one of total items (total is the latest
// known total, for messages such as "in 3 of 8640 timestamps").
func (s *noteSet) addOf(n sample.Note, total int) {
	if s.count == nil {
		s.count = map[sample.Note]int{}
		s.of = map[sample.Note]int{}
	}
	if _, ok := s.count[n]; !ok {
		s.order = append(s.order, n)
	}
	s.count[n]++
	s.of[n] = total
}

func (s *noteSet) list() []sample.Note {
	out := make([]sample.Note, 0, len(s.order))
	for _, n := range s.order {
		c, of := s.count[n], s.of[n]
		switch {
		case of > 0:
			n.Message += " (in " + strconv.Itoa(c) + " of " + strconv.Itoa(of) + " snapshots)"
		case c > 1:
			n.Message += " (" + strconv.Itoa(c) + " times)"
		}
		out = append(out, n)
	}
	return out
}

// progress calls a progress callback at most every 100 ms.
type progress struct {
	fn    func(done, total int64)
	total int64
	last  time.Time
}

func newProgress(fn func(done, total int64), total int64) *progress {
	p := &progress{fn: fn, total: total}
	if fn != nil {
		fn(0, total)
		p.last = time.Now()
	}
	return p
}

func (p *progress) update(done int64) {
	if p.fn == nil {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond {
		p.last = now
		p.fn(min(done, p.total), p.total)
	}
}

func (p *progress) finish() {
	if p.fn != nil {
		p.fn(p.total, p.total)
	}
}

// readHead reads up to n bytes from the start of a file.
func readHead(path string, n int) ([]byte, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return buf[:m], nil
}

// baseName strips a path to its file name without the given extensions.
func baseName(path string, exts ...string) string {
	b := filepath.Base(path)
	for again := true; again; {
		again = false
		for _, e := range exts {
			if t, ok := strings.CutSuffix(b, e); ok && t != "" {
				b, again = t, true
			}
		}
	}
	return b
}

// ReadMem reads a text file (KindOpenMetrics) once into memory, holding at
// most budget bytes of samples and series: past that the error wraps
// store.ErrMemFull, and the caller reads the file into a store instead
// (OpenStore). The Mem reads as a store holding the same samples would.
func ReadMem(path string, opt IngestOptions, budget int64) (*store.Mem, IngestStats, error) {
	kind, err := Detect(path)
	if err != nil {
		return nil, IngestStats{}, err
	}
	if kind != KindOpenMetrics {
		return nil, IngestStats{}, fmt.Errorf("%s is a %s, not a text file: open it with OpenStore", path, kind)
	}
	m := store.NewMem(budget)
	if opt.BatchSamples <= 0 {
		// No transaction to amortise: snapshots handed over sooner are
		// garbage sooner.
		opt.BatchSamples = 8192
	}
	stats, err := read(path, kind, opt, m.AppendBatch)
	if err != nil {
		return nil, stats, err
	}
	m.Seal()
	return m, stats, nil
}
