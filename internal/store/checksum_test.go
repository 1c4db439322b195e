package store

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/storetest"
)

// flippedChunk is the chunk row FlipChunkBits damaged.
type flippedChunk struct {
	seriesID, minT, maxT, n int64
}

// flipChunkBits flips three bits of the first value of the largest chunk
// of a closed store, in the file's own bytes: the chunk still decodes, to
// other values (SQLite's checks see nothing).
func flipChunkBits(t *testing.T, path string) flippedChunk {
	t.Helper()
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Fatalf("%s has a WAL: close the store first", path)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var c flippedChunk
	var data []byte
	err = db.QueryRow("SELECT series_id, min_t, max_t, num_samples, data FROM chunks ORDER BY length(data) DESC LIMIT 1").
		Scan(&c.seriesID, &c.minT, &c.maxT, &c.n, &data)
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	storetest.FlipValueBits(t, path, data)
	return c
}

// selectAll reads every series raw.
func selectAll(t *testing.T, st *Store) map[string][]sample.Point {
	t.Helper()
	ss, err := st.Select(Query{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]sample.Point{}
	for _, s := range ss {
		m[s.Name+s.Labels.String()] = s.Points
	}
	return m
}

// A few bits flipped in a value of a chunk: SQLite's checks pass and the
// chunk decodes, to other values. Before, the store read them as if
// nothing happened. The chunk's checksum now tells: the check names the
// damaged chunk by series and time range, a read fails on it, or with
// SkipDamaged leaves out exactly its samples and reads the rest as
// written.
func TestChunkChecksumFindsBitFlips(t *testing.T) {
	path := filledStore(t)
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := selectAll(t, ro)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	c := flipChunkBits(t, path)
	st, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Named by series (the largest chunk is of one of the m{j=...} series)
	// and time range.
	rng := time.UnixMilli(c.minT).UTC().Format("2006-01-02 15:04:05 UTC") + " to " + time.UnixMilli(c.maxT).UTC().Format("2006-01-02 15:04:05 UTC")
	for name, check := range map[string]func() error{"Check": st.Check, "QuickCheck": st.QuickCheck} {
		err := check()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "1 damaged chunk") || !strings.Contains(err.Error(), "checksum mismatch") ||
			!strings.Contains(err.Error(), "(id "+strconv.FormatInt(c.seriesID, 10)+", min_t") || !strings.Contains(err.Error(), rng) ||
			!strings.Contains(err.Error(), "m{j=") || !strings.Contains(err.Error(), "--lenient") {
			t.Errorf("%s after a bit flip in chunk %+v: %v", name, c, err)
		}
	}
	if _, err := st.Select(Query{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), rng) {
		t.Errorf("Select over the damaged chunk: %v", err)
	}
	st.SkipDamaged(true)
	got := selectAll(t, st)
	damaged := seriesKey(t, path, c.seriesID)
	for key, pts := range want {
		exp := pts
		if key == damaged {
			exp = nil
			for _, p := range pts {
				if p.T < c.minT || p.T > c.maxT {
					exp = append(exp, p)
				}
			}
			if len(pts)-len(exp) != int(c.n) {
				t.Fatalf("%s: %d samples in the damaged chunk's range, it holds %d", key, len(pts)-len(exp), c.n)
			}
		}
		if len(got[key]) != len(exp) {
			t.Errorf("%s: %d samples read, want %d", key, len(got[key]), len(exp))
			continue
		}
		for i := range exp {
			if got[key][i] != exp[i] {
				t.Errorf("%s: sample %d read as %v, written %v", key, i, got[key][i], exp[i])
				break
			}
		}
	}
	skipped, n := st.Skipped()
	if n != 1 || len(skipped) != 1 || skipped[0].SeriesID != c.seriesID || skipped[0].Samples != c.n || skipped[0].Series != damaged {
		t.Errorf("skipped %d chunks (%+v); want the one damaged chunk of %s, %d samples", n, skipped, damaged, c.n)
	}
}

// seriesKey is the name and labels of a series id.
func seriesKey(t *testing.T, path string, id int64) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name, labels string
	if err := db.QueryRow("SELECT name, labels FROM series WHERE id = ?", id).Scan(&name, &labels); err != nil {
		t.Fatal(err)
	}
	return name + labels
}

// A store of format 1 (no checksums) written by the previous memdoctor:
// read as it is by a reader (structural checks only), upgraded in place by
// the first writer, its samples unchanged, and checked from then on.
func TestFormat1Upgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	data, err := os.ReadFile("testdata/store-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reader of a format 1 store: %v", err)
	}
	if err := ro.Check(); err != nil {
		t.Fatalf("check of a format 1 store: %v", err)
	}
	want := selectAll(t, ro)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || len(want["node_memory_MemTotal_bytes"]) != 6*60+30 {
		t.Fatalf("format 1 store read as %d series", len(want))
	}
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("writer of a format 1 store: %v", err)
	}
	sc := &sample.Snapshot{Time: time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)} // cuts the head
	sc.Add("node_memory_MemTotal_bytes", 16<<30)
	if err := st.Append("db1", sc); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var version string
	var chunks, unsummed int
	err = db.QueryRow("SELECT value, (SELECT count(*) FROM chunks), (SELECT count(*) FROM chunks WHERE crc IS NULL) FROM meta WHERE key = 'version'").
		Scan(&version, &chunks, &unsummed)
	_ = db.Close()
	if err != nil || version != strconv.Itoa(FormatVersion) || unsummed != 0 || chunks < 18+3 {
		t.Fatalf("after the upgrade: version %q, %d chunks, %d without checksum (%v)", version, chunks, unsummed, err)
	}
	st, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got := selectAll(t, st)
	if err := st.Check(); err != nil {
		t.Errorf("check after the upgrade: %v", err)
	}
	_ = st.Close()
	for key, pts := range want {
		g := got[key]
		if key == "node_memory_MemTotal_bytes" {
			g = g[:len(g)-1] // the sample appended after the upgrade
		}
		if len(g) != len(pts) {
			t.Errorf("%s: %d samples after the upgrade, %d before", key, len(g), len(pts))
			continue
		}
		for i := range pts {
			if g[i] != pts[i] {
				t.Errorf("%s: sample %d is %v after the upgrade, %v before", key, i, g[i], pts[i])
				break
			}
		}
	}
	flipChunkBits(t, path)
	st, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.QuickCheck(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("bit flip in an upgraded store: %v", err)
	}
}
