package store

import (
	"bytes"
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// filledStore writes a closed store with a few hours of 50 series.
func filledStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	st, err := Open(path, Options{ChunkRange: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		sc := &sample.Snapshot{Time: t0.Add(time.Duration(i) * 15 * time.Second)}
		for j := range 50 {
			sc.Add("m", rng.Float64(), "j", string(rune('a'+j%26))+strings.Repeat("x", j))
		}
		if err := st.Append("h", sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func sqlExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestOpenDamaged(t *testing.T) {
	t.Parallel()
	random := junk(rand.New(rand.NewPCG(3, 4)), 64<<10)
	tests := []struct {
		name     string
		make     func(t *testing.T, path string)
		readOnly bool
		want     error
		msg      string // in the message, besides the file name
	}{
		{"garbage", func(t *testing.T, p string) { write(t, p, random) }, false, ErrCorrupt, "not an SQLite database"},
		{"text", func(t *testing.T, p string) { write(t, p, []byte("MemTotal: 1 kB\n")) }, false, ErrCorrupt, "not an SQLite database"},
		{"empty read-only", func(t *testing.T, p string) { write(t, p, nil) }, true, ErrCorrupt, "empty"},
		{"other schema", func(t *testing.T, p string) {
			sqlExec(t, p, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users (name) VALUES ('x')")
		}, false, ErrCorrupt, "not a memdoctor store"},
		{"other meta", func(t *testing.T, p string) {
			sqlExec(t, p, "CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('format', 'something')")
		}, false, ErrCorrupt, "not a memdoctor store"},
		{"truncated", func(t *testing.T, p string) {
			src := filledStore(t)
			data, _ := os.ReadFile(src)
			write(t, p, data[:len(data)/2])
		}, false, ErrCorrupt, "truncated"},
		{"table missing", func(t *testing.T, p string) {
			copyFile(t, filledStore(t), p)
			sqlExec(t, p, "DROP TABLE chunks")
		}, false, ErrCorrupt, "no chunks table"},
		{"newer format", func(t *testing.T, p string) {
			copyFile(t, filledStore(t), p)
			sqlExec(t, p, "UPDATE meta SET value = '99' WHERE key = 'version'")
		}, false, ErrNewerFormat, "use a newer memdoctor"},
		{"damaged head row", func(t *testing.T, p string) {
			copyFile(t, filledStore(t), p)
			sqlExec(t, p, "UPDATE head SET data = x'01ff' WHERE rowid = (SELECT max(rowid) FROM head)")
		}, false, ErrCorrupt, "head row"},
		{"missing read-only", func(*testing.T, string) {}, true, os.ErrNotExist, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "f.db")
			tt.make(t, path)
			before, _ := os.ReadFile(path)
			st, err := Open(path, Options{ReadOnly: tt.readOnly})
			if err == nil {
				st.Close()
				t.Fatalf("Open succeeded, want %v", tt.want)
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Open = %v\nwant %v naming the file and saying %q", err, tt.want, tt.msg)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("Open changed the file it refused")
			}
		})
	}
}

func TestOpenEmptyFile(t *testing.T) {
	t.Parallel()
	// os.CreateTemp makes an empty file: it becomes a new store.
	f, err := os.CreateTemp(t.TempDir(), "ingest-*.db")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, err := Open(f.Name(), Options{})
	if err != nil {
		t.Fatalf("Open(empty file): %v", err)
	}
	defer st.Close()
	sc := &sample.Snapshot{Time: t0}
	sc.Add("x", 1)
	if err := st.Append("h", sc); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedPages overwrites pages in the middle of a store: whatever
// notices first (Open, Select, Check) says ErrCorrupt; nothing panics.
func TestDamagedPages(t *testing.T) {
	t.Parallel()
	src := filledStore(t)
	sqlExec(t, src, "VACUUM") // no free pages: damage anywhere hits data
	info, _ := os.Stat(src)
	pages := info.Size() / 4096
	rng := rand.New(rand.NewPCG(5, 6))
	noticed := 0
	for trial := range 12 {
		path := filepath.Join(t.TempDir(), "d.db")
		copyFile(t, src, path)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		page := 1 + rng.Int64N(pages-1) // not the header page: that one precheck covers
		if _, err := f.WriteAt(junk(rng, 4096), page*4096); err != nil {
			t.Fatal(err)
		}
		f.Close()
		st, err := Open(path, Options{})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("trial %d (page %d): Open = %v, want ErrCorrupt", trial, page, err)
			}
			noticed++
			continue
		}
		_, serr := st.Select(Query{})
		cerr := st.Check()
		qerr := st.QuickCheck()
		st.Close()
		if (cerr == nil) != (qerr == nil) || qerr != nil && !errors.Is(qerr, ErrCorrupt) {
			t.Errorf("trial %d (page %d): QuickCheck = %v, Check = %v; want both to see the damage", trial, page, qerr, cerr)
		}
		if serr != nil && !errors.Is(serr, ErrCorrupt) {
			t.Errorf("trial %d (page %d): Select = %v, want ErrCorrupt", trial, page, serr)
		}
		if cerr == nil || !errors.Is(cerr, ErrCorrupt) || !strings.Contains(cerr.Error(), ".recover") {
			t.Errorf("trial %d (page %d): Check = %v, want ErrCorrupt saying how to recover", trial, page, cerr)
			continue
		}
		noticed++
	}
	if noticed == 0 {
		t.Error("no damage noticed")
	}
}

// TestDamagedChunk: chunk data has no checksum of its own; a chunk whose
// samples fall outside its row's time range is reported, not returned.
func TestDamagedChunk(t *testing.T) {
	t.Parallel()
	path := filledStore(t)
	sqlExec(t, path, "UPDATE chunks SET data = x'0003ffffffffffffffffffffffffffffff' WHERE rowid = 5")
	st, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The error names the series and the time range lost.
	if _, err := st.Select(Query{}); !errors.Is(err, ErrCorrupt) || !regexp.MustCompile(`chunk of series m\{j="[a-z]+"\} \(id \d+, min_t \d+\) is damaged \(.*\): its \d+ samples from 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC to 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC are lost`).MatchString(err.Error()) {
		t.Errorf("Select over a damaged chunk = %v, want ErrCorrupt naming the series and the range lost", err)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, data)
}

func junk(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
