// Package store keeps recorded samples in one SQLite file: a series table and
// a chunk table whose chunks hold ~2 h of one series, Gorilla/XOR-encoded
// by package xor (the bytes of Prometheus' XOR chunks), plus a head table holding the samples of
// the current chunk range, one row per appended snapshot. The format is
// documented in docs/store-format.md.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// Options configure a store.
type Options struct {
	// ReadOnly opens an existing store for queries only (diagnose, export).
	ReadOnly bool
	// ChunkRange is the time span of a chunk (default 2 h). It is fixed
	// when the store is created; an existing store keeps its own.
	ChunkRange time.Duration
	// Lock is the writer's lock of this store when the caller holds it
	// (AcquireLock) to keep it across reopens; it stays the caller's. A
	// read-write Open without it takes its own, released by Close.
	Lock *Lock
	// CacheKiB is each connection's page cache in KiB (default 1024). The
	// recorder asks for a small one: what a sample writes touches a few
	// pages, and SQLite's allocator keeps what its cache ever held
	// resident for good.
	CacheKiB int
}

// DefaultChunkRange is the chunk span of a new store when Options leave it
// zero: 480 samples per chunk at a 15 s interval.
const DefaultChunkRange = 2 * time.Hour

// FormatVersion is the on-disk format this package writes. It refuses a
// store whose version is newer.
const FormatVersion = 2

// formatName is meta's "format" value: it tells a store from any other
// SQLite file.
const formatName = "memdoctor-store"

// ErrOutOfOrder is returned for samples older than what is stored.
var ErrOutOfOrder = errors.New("sample out of order")

// ErrCorrupt is wrapped when the file is not a readable store.
var ErrCorrupt = errors.New("store damaged")

// ErrNewerFormat is wrapped when the store was written by a newer memdoctor
// whose format this build cannot read.
var ErrNewerFormat = errors.New("store format newer than this memdoctor")

// ErrNoData is wrapped when an instance has no sample where one was asked
// for (Latest, TimeRange).
var ErrNoData = errors.New("no samples")

// ErrReadOnly is wrapped when a store opened with Options.ReadOnly is asked
// to change.
var ErrReadOnly = errors.New("store opened read-only")

// Store is an open store file. Safe for concurrent use: one writer (the
// recorder) and any number of readers, also from other processes.
type Store struct {
	path     string
	readOnly bool
	rangeMS  int64 // chunk range in milliseconds

	ownLock *Lock // the writer's lock Open took itself, released by Close

	hasCRC      bool        // the chunks table has its crc column (format 2)
	skipDamaged atomic.Bool // reads leave damaged chunks out (SkipDamaged)
	dmu         sync.Mutex  // guards skipped, nSkipped
	skipped     []Damage    // the first damaged chunks reads left out
	nSkipped    int

	wdb *sql.DB // the one writing connection (BEGIN IMMEDIATE); nil when read-only
	rdb *sql.DB // reading connections

	// mu serialises writers and guards the head cache. A reader holds it
	// only while it opens its read transaction and copies head data.
	mu     sync.Mutex
	heads  map[string]*instHead
	gen    int64 // meta series_gen the series ids in heads were resolved under
	closed bool

	rstmts readStmts // the read path's prepared statements
	sealed bool      // Seal: no writer any more, loaded heads stay current
}

// busyTimeoutMS bounds how long a writer waits for another writer (two
// recorders on one file) before failing with SQLITE_BUSY.
const busyTimeoutMS = 10000

// Open opens or creates a store file.
func Open(path string, opt Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty file name")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := precheck(abs, opt.ReadOnly); err != nil {
		return nil, err
	}
	s := &Store{path: abs, readOnly: opt.ReadOnly, heads: map[string]*instHead{}}
	if !opt.ReadOnly && opt.Lock == nil {
		// One writer at a time, refused before the file is touched: a
		// second recorder would otherwise interleave its samples.
		if s.ownLock, err = AcquireLock(abs); err != nil {
			return nil, err
		}
	}
	if err := s.open(opt); err != nil {
		_ = s.closeDBs() // the open error is the one to report
		return nil, err
	}
	return s, nil
}

// precheck looks at the file before SQLite does: a missing file for a
// read-only open, a file that is not SQLite, or one cut short.
func precheck(path string, readOnly bool) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		if readOnly {
			return fmt.Errorf("open store %s: %w", path, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("open store %s: is a directory", path)
	}
	if !fi.Mode().IsRegular() {
		// A block device's size reads 0, which would make it a new store.
		return fmt.Errorf("open store %s: not a regular file (%s): a store is a file; name a new or existing store file", path, fi.Mode().Type())
	}
	if fi.Size() == 0 {
		if readOnly {
			return corruptf(path, "the file is empty: it is not a memdoctor store (record into it first)")
		}
		return nil // an empty file (os.CreateTemp) becomes a new store
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only
	var hdr [100]byte
	n, _ := f.ReadAt(hdr[:], 0)
	if n < len(hdr) || string(hdr[:16]) != "SQLite format 3\x00" {
		return corruptf(path, "the file is not an SQLite database, so not a memdoctor store (check the file name)")
	}
	pageSize := int64(hdr[16])<<8 | int64(hdr[17])
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return corruptf(path, "bad page size in the SQLite header; "+recoverHint(path))
	}
	pages := int64(hdr[28])<<24 | int64(hdr[29])<<16 | int64(hdr[30])<<8 | int64(hdr[31])
	valid := string(hdr[24:28]) == string(hdr[92:96])
	// A checkpoint interrupted by a crash may leave the file shorter than its
	// new header says; the WAL then still holds the pages, so only judge the
	// size when there is no WAL.
	if wal, err := os.Stat(path + "-wal"); valid && pages > 0 && (err != nil || wal.Size() == 0) && pages*pageSize > fi.Size() {
		return corruptf(path, fmt.Sprintf("the file is truncated (%d bytes, the header says %d); %s",
			fi.Size(), pages*pageSize, recoverHint(path)))
	}
	return nil
}

// recoverHint tells what to do with a damaged store.
func recoverHint(path string) string {
	return fmt.Sprintf("keep the file and recover what is readable with `sqlite3 %s .recover | sqlite3 %s.recovered`, then use %s.recovered (or move the file aside to start a new store)",
		path, path, path)
}

// corruptf returns an error wrapping ErrCorrupt that names the file.
func corruptf(path, msg string) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, msg)
}

// dsn builds the driver's URI for path.
func dsn(path string, readOnly bool, cacheKiB int, params ...string) string {
	var b strings.Builder
	b.WriteString("file:")
	for _, r := range path {
		switch r {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("?_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMS) + ")")
	// A 1 MiB page cache per connection by default (SQLite's default is
	// 2 MiB): the store is read in large sequential chunk scans that gain
	// little from caching (Options.CacheKiB).
	if cacheKiB <= 0 {
		cacheKiB = 1024
	}
	b.WriteString("&_pragma=cache_size(-" + strconv.Itoa(cacheKiB) + ")")
	if readOnly {
		b.WriteString("&mode=ro")
	}
	for _, p := range params {
		b.WriteString("&" + p)
	}
	return b.String()
}

func (s *Store) open(opt Options) error {
	var err error
	if !s.readOnly {
		// synchronous=FULL: the WAL is fsynced at every commit, so an
		// Append that returned survives a power cut as well as a kill -9
		// (NORMAL would survive kill -9 only). The cost is one fsync per
		// Append, i.e. per interval.
		s.wdb, err = sql.Open("sqlite", dsn(s.path, false, opt.CacheKiB, "_pragma=synchronous(FULL)", "_txlock=immediate"))
		if err != nil {
			return fmt.Errorf("open store %s: %w", s.path, err)
		}
		s.wdb.SetMaxOpenConns(1)
		s.wdb.SetConnMaxIdleTime(0)
	}
	s.rdb, err = sql.Open("sqlite", dsn(s.path, s.readOnly, opt.CacheKiB, "_pragma=query_only(1)"))
	if err != nil {
		return fmt.Errorf("open store %s: %w", s.path, err)
	}
	s.rdb.SetMaxOpenConns(4)
	if err := s.initSchema(opt); err != nil {
		return err
	}
	// Load every instance's head: a damaged head shows at Open, and the
	// recorder's first Append finds its state ready.
	s.mu.Lock()
	defer s.mu.Unlock()
	db := s.rdb
	if s.wdb != nil {
		db = s.wdb
	}
	tx, err := db.Begin()
	if err != nil {
		return s.wrap("open", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only transaction
	if _, err := s.syncHeads(tx, ""); err != nil {
		return s.wrap("open: load head", err)
	}
	return nil
}

// schema creates the tables of format version 2.
var schema = []string{
	`CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID`,
	`CREATE TABLE instances (
	name  TEXT PRIMARY KEY,
	min_t INTEGER,
	max_t INTEGER
) WITHOUT ROWID`,
	`CREATE TABLE series (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	instance TEXT NOT NULL,
	name     TEXT NOT NULL,
	labels   TEXT NOT NULL,
	UNIQUE (instance, name, labels)
)`,
	`CREATE TABLE chunks (
	series_id   INTEGER NOT NULL REFERENCES series (id),
	min_t       INTEGER NOT NULL,
	max_t       INTEGER NOT NULL,
	num_samples INTEGER NOT NULL,
	data        BLOB NOT NULL,
	crc         INTEGER,
	PRIMARY KEY (series_id, min_t)
)`,
	`CREATE TABLE head (
	instance TEXT NOT NULL,
	t        INTEGER NOT NULL,
	data     BLOB NOT NULL
)`,
	headIndex,
}

// headIndex finds an instance's head rows without reading every
// instance's: without it each Append of a store holding many instances
// (a fleet ingested from one file) scans the whole head table. Stores
// created before it get it at their first read-write open; older readers
// ignore it.
const headIndex = `CREATE INDEX IF NOT EXISTS head_instance ON head (instance, t)`

// requiredTables must all exist in a store.
var requiredTables = []string{"meta", "instances", "series", "chunks", "head"}

func (s *Store) initSchema(opt Options) error {
	ctx := context.Background()
	db := s.rdb
	if s.wdb != nil {
		db = s.wdb
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return s.wrap("open", err)
	}
	defer func() { _ = conn.Close() }() // returns it to the pool
	tables, err := listTables(ctx, conn)
	if err != nil {
		return s.wrap("open", err)
	}
	if len(tables) == 0 {
		if s.readOnly {
			return corruptf(s.path, "the SQLite database is empty: it is not a memdoctor store (record into it first)")
		}
		if err := s.create(ctx, conn, opt); err != nil {
			return err
		}
		tables, err = listTables(ctx, conn)
		if err != nil {
			return s.wrap("open", err)
		}
	}
	if !tables["meta"] {
		return corruptf(s.path, "the file is an SQLite database but not a memdoctor store (no meta table); check the file name")
	}
	meta, err := readMeta(ctx, conn)
	if err != nil {
		return s.wrap("open: read meta", err)
	}
	if meta["format"] != formatName {
		return corruptf(s.path, "the file is an SQLite database but not a memdoctor store (meta has no format "+formatName+"); check the file name")
	}
	v, err := strconv.Atoi(meta["version"])
	if err != nil || v < 1 {
		return corruptf(s.path, fmt.Sprintf("meta version %q is not a format version; %s", meta["version"], recoverHint(s.path)))
	}
	if v > FormatVersion {
		return fmt.Errorf("%w: %s was written in store format %d, this memdoctor reads format %d and older: use a newer memdoctor",
			ErrNewerFormat, s.path, v, FormatVersion)
	}
	for _, t := range requiredTables {
		if !tables[t] {
			return corruptf(s.path, "the store has no "+t+" table; "+recoverHint(s.path))
		}
	}
	s.rangeMS, err = strconv.ParseInt(meta["chunk_range_ms"], 10, 64)
	if err != nil || s.rangeMS <= 0 {
		return corruptf(s.path, fmt.Sprintf("meta chunk_range_ms %q is not a duration; %s", meta["chunk_range_ms"], recoverHint(s.path)))
	}
	s.gen, _ = strconv.ParseInt(meta["series_gen"], 10, 64)
	if !s.readOnly {
		// A store rebuilt with `sqlite3 .recover` comes back in rollback
		// journal mode: put it back in WAL mode (persistent in the file).
		if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
			return s.wrap("open: set WAL mode", err)
		}
		if _, err := conn.ExecContext(ctx, headIndex); err != nil {
			return s.wrap("open: index the head", err)
		}
		if v == 1 {
			if err := s.migrateV1(ctx, conn); err != nil {
				return err
			}
		}
	}
	if s.hasCRC, err = hasColumn(ctx, conn, "chunks", "crc"); err != nil {
		return s.wrap("open", err)
	}
	return nil
}

// create writes the schema into an empty database.
func (s *Store) create(ctx context.Context, conn *sql.Conn, opt Options) error {
	rng := opt.ChunkRange
	if rng == 0 {
		rng = DefaultChunkRange
	}
	if rng < time.Second {
		return fmt.Errorf("create store %s: chunk range %v: want at least 1s", s.path, rng)
	}
	// auto_vacuum must be chosen before the first table exists; WAL mode
	// cannot be entered inside a transaction.
	for _, p := range []string{"PRAGMA auto_vacuum=INCREMENTAL", "PRAGMA journal_mode=WAL"} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return s.wrap("create", err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: another process may be creating it too
	if err != nil {
		return s.wrap("create", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type='table'").Scan(&n); err != nil {
		return s.wrap("create", err)
	}
	if n > 0 {
		return nil // created meanwhile by another process; validated by the caller
	}
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return s.wrap("create", err)
		}
	}
	for k, v := range map[string]string{
		"format":         formatName,
		"version":        strconv.Itoa(FormatVersion),
		"chunk_range_ms": strconv.FormatInt(rng.Milliseconds(), 10),
		"chunk_encoding": "XOR",
		"series_gen":     "0",
		"created":        time.Now().UTC().Format(time.RFC3339),
	} {
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES (?, ?)", k, v); err != nil {
			return s.wrap("create", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.wrap("create", err)
	}
	return nil
}

func listTables(ctx context.Context, conn *sql.Conn) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type='table'")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	tables := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		tables[name] = true
	}
	return tables, rows.Err()
}

func readMeta(ctx context.Context, conn *sql.Conn) (map[string]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT key, value FROM meta")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	meta := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		meta[k] = v
	}
	return meta, rows.Err()
}

// Close flushes and closes the store. Every Append is already durable;
// closing the last connection checkpoints the WAL into the file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.heads = nil
	if err := s.closeDBs(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) closeDBs() error {
	var errs []error
	s.rstmts.close()
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	errs = append(errs, s.ownLock.Release()) // after the last write
	return errors.Join(errs...)
}

// Seal declares that the store is no longer written, by this process or
// any other (the temporary store a file was ingested into, once read):
// reads then trust the heads they loaded instead of checking them against
// the file at every transaction (two queries each), and the heads loaded
// so far are dropped (at 100,000 instances of one sample they held about
// 100 MB). Appending to a sealed store fails.
func (s *Store) Seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealed = true
	clear(s.heads)
}

// Forget drops what the store holds in memory of an instance (its head's
// mirror), for a reader done with it; a later read loads it again.
func (s *Store) Forget(instance string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.heads, instance)
}

// Path returns the store's file name (absolute).
func (s *Store) Path() string { return s.path }

// checkOpen fails once the store is closed; callers hold s.mu.
func (s *Store) checkOpen(op string) error {
	if s.closed {
		return fmt.Errorf("%s: store %s is closed", op, s.path)
	}
	return nil
}

// checkWritable fails on a read-only or closed store; callers hold s.mu.
func (s *Store) checkWritable(op string) error {
	if err := s.checkOpen(op); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("%s: %w: %s", op, ErrReadOnly, s.path)
	}
	if s.sealed {
		return fmt.Errorf("%s: store %s is sealed: %w", op, s.path, ErrReadOnly)
	}
	return nil
}
