package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
	"github.com/memdoctor/memdoctor/internal/storetest"
)

// writeStore records two days of a host's memory series through the store
// API, beside filesystem series no diagnosis reads, which fill most of the
// file: damage in the middle of it is where only export looks.
func writeStore(t *testing.T, path string) {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2 * 24 * 60 {
		sc := &sample.Snapshot{Time: start.Add(time.Duration(i) * time.Minute)}
		sc.Add("node_memory_MemTotal_bytes", 16<<30)
		sc.Add("node_memory_MemAvailable_bytes", float64(12<<30-i*(1<<20)+(i*7919)%(64<<20)))
		sc.Add("node_memory_MemFree_bytes", float64(4<<30+(i*104729)%(256<<20)))
		sc.Add("node_memory_SUnreclaim_bytes", float64(200<<20+i*4096))
		for d := range 60 { // read by export only: most of the file's pages
			sc.Add("node_filesystem_avail_bytes", float64((d+1)<<30+(i*d*7919)%(1<<28)), "mountpoint", fmt.Sprintf("/srv/vol%d", d))
		}
		if err := st.Append("db1", sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// Finding 6: a store with one zeroed page. diagnose, report and compare
// once exited 0 with no note (their queries did not touch the page) while
// export said "database disk image is malformed". Every reader now says the
// store is damaged, names the file and how to recover it; diagnose
// --lenient goes on with a note.
func TestDamagedStoreReported(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	bad := filepath.Join(dir, "bad.db")
	writeStore(t, good)
	writeStore(t, bad)
	if _, errOut, code := runCLI(t, "diagnose", "--from", bad); code != 0 {
		t.Fatalf("diagnose of the intact store exited %d: %s", code, errOut)
	}
	fi, err := os.Stat(bad)
	if err != nil {
		t.Fatal(err)
	}
	pages := fi.Size() / 4096
	f, err := os.OpenFile(bad, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 4096), pages/2*4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("zeroed page %d of %d", pages/2, pages)

	for _, args := range [][]string{
		{"diagnose", "--from", bad},
		{"diagnose", "--from", bad, "--json"},
		{"report", "--from", bad, "-o", filepath.Join(dir, "r.html")},
		{"compare", good, bad},
		{"compare", bad, "--a-window", "2024-03-01/2024-03-02", "--b-window", "2024-03-02/2024-03-03"},
		{"export", "--from", bad, "-o", filepath.Join(dir, "x.om")},
	} {
		out, errOut, code := runCLI(t, args...)
		if code == 0 {
			t.Errorf("%s on a damaged store exited 0:\n%.600s", args[0], out)
			continue
		}
		if !strings.Contains(errOut, bad) || !strings.Contains(errOut, "damaged") && !strings.Contains(errOut, "corrupt") ||
			!strings.Contains(errOut, ".recover") {
			t.Errorf("%v: the error does not name the file, the damage and how to recover:\n%s", args, errOut)
		}
	}
	// --lenient goes on when the damage is outside what it reads, with a
	// note; over the damage it fails as above. Never silence.
	out, errOut, code := runCLI(t, "diagnose", "--from", bad, "--lenient")
	switch {
	case code == 0 && (!strings.Contains(out, bad+": ") || !strings.Contains(out, "damaged")):
		t.Errorf("diagnose --lenient does not note the damage:\n%s", out)
	case code != 0 && (!strings.Contains(errOut, bad) || !strings.Contains(errOut, ".recover")):
		t.Errorf("diagnose --lenient: unclear error:\n%s", errOut)
	}
}

// Bits flipped in a value of a chunk the real recorder wrote (into a store
// made with 4 s chunks, so that a few seconds of recording cut several):
// SQLite's checks pass and the chunk decodes, to other values. Before,
// every reader used them as recorded. Now diagnose refuses the store,
// naming the damaged chunk's series and time range; --lenient diagnoses
// the rest with a note saying what is lost.
func TestRecordedChunkBitFlipsReported(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	t.Parallel() // 10 s of recording into its own store
	db := filepath.Join(t.TempDir(), "md.db")
	st, err := store.Open(db, store.Options{ChunkRange: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rec := startRecorder(t, db, 500*time.Millisecond) // slow enough for a loaded machine
	time.Sleep(10 * time.Second)
	rec.stop(t)
	series, from, to := flipRecordedChunk(t, db)
	t.Logf("flipped a value of the chunk of %s from %s to %s", series, from, to)

	_, errOut, code := runCLI(t, "diagnose", "--from", db)
	if code == 0 || !strings.Contains(errOut, db) || !strings.Contains(errOut, "checksum mismatch") ||
		!strings.Contains(errOut, series) || !strings.Contains(errOut, from+" to "+to) {
		t.Errorf("diagnose of a store with a damaged chunk: exit %d:\n%s", code, errOut)
	}
	out, errOut, code := runCLI(t, "diagnose", "--from", db, "--lenient")
	if code != 0 || !strings.Contains(out, "checksum mismatch") || !strings.Contains(out, series) {
		t.Errorf("diagnose --lenient: exit %d, no note of the damaged chunk:\n%s\n%s", code, out, errOut)
	}
}

// flipRecordedChunk flips three bits of the first value of the largest
// chunk of a closed store, in the file's bytes (every copy of them), and
// returns the chunk's series and time range as messages print them.
func flipRecordedChunk(t *testing.T, path string) (series, from, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var name, labels string
	var minT, maxT int64
	var data []byte
	err = db.QueryRow(`SELECT s.name, s.labels, c.min_t, c.max_t, c.data FROM chunks c JOIN series s ON s.id = c.series_id
		ORDER BY length(c.data) DESC LIMIT 1`).Scan(&name, &labels, &minT, &maxT, &data)
	_ = db.Close()
	if err != nil {
		t.Fatalf("no chunk recorded: %v", err)
	}
	storetest.FlipValueBits(t, path, data)
	const layout = "2006-01-02 15:04:05 UTC"
	return name + labels, time.UnixMilli(minT).UTC().Format(layout), time.UnixMilli(maxT).UTC().Format(layout)
}
