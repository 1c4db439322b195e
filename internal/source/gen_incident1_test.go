package source

import (
	"bytes"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

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

func TestIncident1Shape50(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := Incident1Options{Days: 14, Interval: 30 * time.Minute, Shape: Shape50}
	if err := WriteIncident1CronDir(dir, o); err != nil {
		t.Fatal(err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Scrapes, 14*48; got != want {
		t.Fatalf("scrapes %d, want %d", got, want)
	}
	inst := filepath.Base(dir)
	ts, cg := ms.series(inst, "node_cgroups_cgroups", "subsys_name", "memory")
	for i := 1; i < len(cg); i++ {
		if cg[i] < cg[i-1] {
			t.Fatalf("5.0 shape: memory cgroups dropped from %v to %v at %s", cg[i-1], cg[i], ts[i])
		}
	}
	if got, want := slopePerDay(ts, cg), 10000.0; math.Abs(got-want)/want > 0.03 {
		t.Errorf("memory cgroups grow %.0f/day, want ~%.0f", got, want)
	}
	ts, su := ms.series(inst, "node_memory_SUnreclaim_bytes")
	if got, want := slopePerDay(ts, su)*7, 4e9; math.Abs(got-want)/want > 0.05 {
		t.Errorf("SUnreclaim grows %.3g bytes/week, want ~%.3g", got, want)
	}
	_, av := ms.series(inst, "node_memory_MemAvailable_bytes")
	if got, want := av[0]-av[len(av)-1], su[len(su)-1]-su[0]; got < want {
		t.Errorf("MemAvailable fell %.3g bytes, less than SUnreclaim grew (%.3g)", got, want)
	}
	// The growth is in the named caches.
	for _, c := range []string{"mem_cgroup", "kmalloc-4k", "kmalloc-512", "kmalloc-cg-4k"} {
		ts, v := ms.series(inst, "node_slabinfo_objects", "slab", c)
		if s := slopePerDay(ts, v); s <= 0 {
			t.Errorf("slab %s: objects slope %.1f/day, want growth", c, s)
		}
	}
	ts, v := ms.series(inst, "node_slabinfo_objects", "slab", "ext4_inode_cache")
	if s := slopePerDay(ts, v); s != 0 {
		t.Errorf("slab ext4_inode_cache: slope %.1f/day, want none", s)
	}
	// The kernel release is known.
	last := ms.scrapes[inst][len(ms.scrapes[inst])-1]
	if ms := last.Select("node_uname_info"); len(ms) != 1 || ms[0].Labels.Get("release") != "5.0.0-1-amd64" {
		t.Errorf("node_uname_info %v, want release 5.0.0-1-amd64", ms)
	}
}

func TestIncident1Shape53(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := Incident1Options{Days: 7, Interval: 15 * time.Minute, Shape: Shape53, Gzip: true, PerDayDirs: true, Seconds: true}
	if err := WriteIncident1CronDir(dir, o); err != nil {
		t.Fatal(err)
	}
	ms := newMemSink(t)
	st, err := Read(dir, IngestOptions{Instance: "game-17"}, ms.sink)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Scrapes, 7*96; got != want {
		t.Fatalf("scrapes %d, want %d", got, want)
	}
	ts, cg := ms.series("game-17", "node_cgroups_cgroups", "subsys_name", "memory")
	drops := 0
	for i := 1; i < len(cg); i++ {
		if cg[i] < cg[i-1] {
			drops++
			if ts[i].Hour() != 4 || ts[i].Minute() != 0 {
				t.Errorf("drop at %s, want 04:00", ts[i])
			}
			if cg[i] > 0.05*cg[i-1]+100 {
				t.Errorf("drop at %s to %v from %v: want near the base", ts[i], cg[i], cg[i-1])
			}
		}
	}
	if drops != 7 {
		t.Errorf("%d drops in 7 days, want 7 (one at 04:00 every day)", drops)
	}
	if peak := slices.Max(cg); peak < 9000 {
		t.Errorf("peak %v memory cgroups, want ~10000 (a day's worth)", peak)
	}
	_, su := ms.series("game-17", "node_memory_SUnreclaim_bytes")
	if d := su[len(su)-1] - su[0]; math.Abs(d) > 200e6 {
		t.Errorf("5.3 shape: SUnreclaim moved %.3g bytes over a week, want no trend", d)
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
