package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

var captureNames = []string{"healthy", "malloc-arenas", "dying-cgroups", "low-available"} // in time order

func captureFile(name string) string {
	return filepath.Join(captures, name+"-6.18-x86_64-hybrid.txtar")
}

// collectCapture is what check --capture sees.
func collectCapture(t *testing.T, file string) *sample.Snapshot {
	t.Helper()
	fsys, prov, err := capture.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pfs := procfs.NewFSFrom(fsys, prov.PageSize)
	pfs.GlibcBanner = prov.Glibc
	res, err := collect.Collect(pfs, collect.Options{TopProcesses: 10, TopCgroups: 10, ArenaScan: true,
		Now: func() time.Time { return prov.Time }})
	if err != nil {
		t.Fatal(err)
	}
	dropTimings(&res.Snapshot)
	return &res.Snapshot
}

// The real captures in one directory (one of them compressed, beside a
// file that is no capture) ingest in provenance time order, each exactly
// as collecting it directly.
func TestCapturesDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Names sort differently from times on purpose.
	for i, n := range captureNames {
		data, err := os.ReadFile(captureFile(n))
		if err != nil {
			t.Fatal(err)
		}
		name := string(rune('z'-i)) + "-" + n + ".txtar"
		if n == "dying-cgroups" {
			data, name = gz(t, data), name+".gz"
		}
		writeFile(t, dir, name, string(data))
	}
	writeFile(t, dir, "notes.txt", "taken by hand\n")
	writeFile(t, dir, "other.txtar", "-- a --\nb\n")
	if k, err := Detect(dir); err != nil || k != KindCaptures {
		t.Fatalf("Detect = %v, %v", k, err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{Workers: 2}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 1 || st.Instances[0] != "vm" {
		t.Fatalf("instances %v, want [vm] (the captured hostname)", st.Instances)
	}
	got := ms.snapshots["vm"]
	var want []*sample.Snapshot
	for _, n := range captureNames {
		want = append(want, collectCapture(t, captureFile(n)))
	}
	sameSnapshots(t, "vm", got, want)
	if !got[0].Has("memdoctor_process_rss_bytes") && !got[0].Has("memdoctor_processes") {
		t.Error("no process series: captures are collected with their processes")
	}
	said := false
	for _, n := range st.Notes {
		said = said || strings.Contains(n.Message, "2 entries are not capture archives, ignored: notes.txt, other.txtar")
	}
	if !said {
		t.Errorf("no note about the other files: %v", st.Notes)
	}
}

func TestCaptureSingleAndUnpacked(t *testing.T) {
	t.Parallel()
	file := captureFile("dying-cgroups")
	want := []*sample.Snapshot{collectCapture(t, file)}
	ms := newMemSink(t)
	if _, err := Read(file, IngestOptions{Instance: "h"}, ms.sink); err != nil {
		t.Fatal(err)
	}
	sameSnapshots(t, "h", ms.snapshots["h"], want)

	fsys, prov, err := capture.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "root")
	if err := capture.Unpack(fsys, prov, dir); err != nil {
		t.Fatal(err)
	}
	if k, err := Detect(dir); err != nil || k != KindCaptures {
		t.Fatalf("Detect(unpacked) = %v, %v", k, err)
	}
	ms = newMemSink(t)
	if _, err := Read(dir, IngestOptions{Instance: "h"}, ms.sink); err != nil {
		t.Fatal(err)
	}
	sameSnapshots(t, "h", ms.snapshots["h"], want)
}

func TestCapturesMalformed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, err := os.ReadFile(captureFile("healthy"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txtar", string(good))
	cut := writeFile(t, dir, "b.txtar", strings.Replace(string(good[:len(good)/2]), "2026-11-21T21:31:48Z", "2026-11-21T22:00:00Z", 1))
	_, err = Read(dir, IngestOptions{}, newMemSink(t).sink)
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != cut || !errors.Is(err, capture.ErrCorrupt) || !strings.Contains(err.Error(), "line") {
		t.Fatalf("error %v, want the cut capture named with a line", err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{Lenient: true}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if st.Snapshots != 1 || st.Skipped != 1 {
		t.Errorf("lenient: %d scrapes, %d skipped; want 1 and 1", st.Snapshots, st.Skipped)
	}
}
