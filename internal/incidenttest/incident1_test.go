package incidenttest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

const captures = "../../testdata/captures"

// The generator's text is the capture's text: rendered before any step, every
// file is byte for byte the original.
func TestIncident1RendersRealText(t *testing.T) {
	t.Parallel()
	fsys, prov, err := capture.LoadFile(filepath.Join(captures, "healthy-6.18-x86_64-hybrid.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	o := Incident1Options{Kinds: []string{"meminfo", "slabinfo", "cgroups", "vmstat", "zoneinfo"}}.WithDefaults()
	g, err := newIncident1Gen(fsys, prov.PageSize, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"meminfo", "slabinfo", "cgroups", "vmstat", "zoneinfo"} {
		want, err := fs.ReadFile(fsys, "proc/"+k)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.render(k); !bytes.Equal(got, want) {
			t.Errorf("%s: rendered text differs from the capture's:\n%s\nwant:\n%s", k, firstDiff(got, want), firstDiff(want, got))
		}
	}
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range la {
		if i >= len(lb) || !bytes.Equal(la[i], lb[i]) {
			return string(la[i])
		}
	}
	return "(prefix)"
}

// Every generated file parses with the kernel-file parsers, and meminfo
// stays self-consistent: Slab = SReclaimable + SUnreclaim, and the slab
// growth in slabinfo is the SUnreclaim growth in meminfo.
func TestIncident1SelfConsistent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := Incident1Options{Days: 8, Interval: 6 * time.Hour, Kinds: []string{"meminfo", "slabinfo", "cgroups", "vmstat", "zoneinfo", "osrelease"}}
	if err := WriteIncident1CronDir(dir, o); err != nil {
		t.Fatal(err)
	}
	first := "2020-01-01.00:00"
	last := "2020-01-08.18:00"
	read := func(stamp string) procfs.FS {
		m := fstest.MapFS{}
		for _, k := range []string{"meminfo", "slabinfo", "cgroups", "vmstat", "zoneinfo"} {
			b, err := os.ReadFile(filepath.Join(dir, k+"_"+stamp))
			if err != nil {
				t.Fatal(err)
			}
			m["proc/"+k] = &fstest.MapFile{Data: b}
		}
		return procfs.NewFSFrom(m, 4096)
	}
	slabBytes := func(f procfs.FS) (unrecl int64) {
		slabs, err := f.Slabinfo()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range slabs {
			if s.Name != "dentry" {
				unrecl += s.NumSlabs * s.PagesPerSlab * 4096
			}
		}
		return unrecl
	}
	a, b := read(first), read(last)
	for _, f := range []procfs.FS{a, b} {
		mi, err := f.Meminfo()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := mi.Value("Slab"), mi.Value("SReclaimable")+mi.Value("SUnreclaim"); got != want {
			t.Errorf("Slab %d, want SReclaimable+SUnreclaim %d", got, want)
		}
		if mi.Value("MemFree") <= 0 || mi.Value("MemAvailable") <= 0 || mi.Value("MemAvailable") > mi.Value("MemTotal") {
			t.Errorf("MemFree %d MemAvailable %d MemTotal %d", mi.Value("MemFree"), mi.Value("MemAvailable"), mi.Value("MemTotal"))
		}
		if _, err := f.Vmstat(); err != nil {
			t.Error(err)
		}
		if _, err := f.Zoneinfo(); err != nil {
			t.Error(err)
		}
	}
	ma, _ := a.Meminfo()
	mb, _ := b.Meminfo()
	dMem := mb.Value("SUnreclaim") - ma.Value("SUnreclaim")
	dSlab := slabBytes(b) - slabBytes(a)
	if got, want := dMem, dSlab; got != want {
		t.Errorf("SUnreclaim grew %d bytes, want the slabinfo growth %d", got, want)
	}
	dFree := ma.Value("MemFree") - mb.Value("MemFree")
	if dFree < dMem {
		t.Errorf("MemFree fell %d bytes, less than SUnreclaim grew (%d)", dFree, dMem)
	}
	va, _ := a.Vmstat()
	vb, _ := b.Vmstat()
	if got, want := (vb.Value("nr_slab_unreclaimable")-va.Value("nr_slab_unreclaimable"))*4096, dMem; got != want {
		t.Errorf("vmstat nr_slab_unreclaimable grew %d bytes, want %d", got, want)
	}
}

// Same options, same bytes.
func TestIncident1Deterministic(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	o := Incident1Options{Days: 1, Interval: 6 * time.Hour}
	for _, d := range []string{a, b} {
		if err := WriteIncident1CronDir(d, o); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(ents), 4*4; got != want {
		t.Fatalf("%d files, want %d", got, want)
	}
	for _, e := range ents {
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, _ := os.ReadFile(filepath.Join(b, e.Name()))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", e.Name())
		}
	}
}

func TestIncident1BadKind(t *testing.T) {
	t.Parallel()
	err := WriteIncident1CronDir(t.TempDir(), Incident1Options{Kinds: []string{"meminfo", "stat"}})
	if err == nil {
		t.Fatal("stat files: no error")
	}
}
