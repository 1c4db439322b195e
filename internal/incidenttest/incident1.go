// Package incidenttest generates test data for memdoctor's sources: the
// cron directory of incident 1, synthetic shape on real text. Only tests
// (and benchmarks) import it.
//
// Incident 1 was a game-server host on kernel 5.0 whose memory cgroups (one
// per match) piled up as dying cgroups: hundreds of thousands of them, each
// pinning its own slab, and SUnreclaim grew by about 4 GB a week until the
// host ran out of memory. The only data was a cron job saving /proc files
// every 5 minutes. WriteIncident1CronDir rebuilds such a directory from the
// real kernel text of this machine's capture, with the incident's shape
// injected; nothing of it is checked in.
package incidenttest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
)

// The file-name stamps of a cron directory (name_2006-01-02.15:04, with
// seconds when asked for), as internal/source reads them.
const (
	cronLayout     = "2006-01-02.15:04"
	cronLayoutSecs = "2006-01-02.15:04:05"
)

// Incident1Shape is the kernel behaviour the generated data shows.
type Incident1Shape int

const (
	// Shape50 is kernel 5.0: removed memory cgroups are never freed (the
	// memory cgroup count only grows) and each pins slab: SUnreclaim grows
	// in proportion, about SUnreclaimPerWeek.
	Shape50 Incident1Shape = iota
	// Shape53 is kernel 5.3 and later: slab is reparented, and the dying
	// cgroups are freed once a day (at DropHour) when their page cache is
	// reclaimed: the count and the little slab they hold drop daily.
	Shape53
)

// Incident1BaseCapture is the capture whose kernel text the generator uses,
// relative to the module root.
const Incident1BaseCapture = "testdata/captures/healthy-6.18-x86_64-hybrid.txtar"

// Incident1Options shape the generated directory. The zero value gives the
// 5.0 shape over 30 days every 5 minutes.
type Incident1Options struct {
	// Start is the first snapshot time (default 2020-01-01T00:00:00Z).
	Start time.Time
	// Days spanned (default 30) and Interval between snapshots (default 5 min).
	Days     int
	Interval time.Duration
	Shape    Incident1Shape
	// CgroupsPerDay is how many memory cgroups are removed (and stay dying)
	// per day (default 10 000).
	CgroupsPerDay int
	// SUnreclaimPerWeek is the growth of SUnreclaim in the 5.0 shape, bytes
	// (default 4 GB).
	SUnreclaimPerWeek int64
	// DropHour is when, in hours after the start of each day (days counted
	// from Start), the 5.3 shape's daily drop comes (default 4, so 04:00
	// for a Start at midnight; 0 means the default, 24 the start of the
	// day).
	DropHour int
	// Kernel is written as osrelease files (default "5.0.0-1-amd64" or
	// "5.3.0-1-amd64" by shape).
	Kernel string
	// Kinds are the files written per snapshot (default meminfo, slabinfo,
	// cgroups, osrelease; vmstat and zoneinfo may be added). meminfo is
	// always written.
	Kinds []string
	// Gzip compresses every file (name.gz); PerDayDirs writes each day into
	// a YYYY-MM-DD subdirectory; Seconds names files HH:MM:SS.
	Gzip, PerDayDirs, Seconds bool
	// Location is the time zone of the file names (default UTC).
	Location *time.Location
	// Seed makes the noise reproducible (default 1).
	Seed uint64
	// Capture is the capture to take the kernel text from (default
	// Incident1BaseCapture, found from the module root).
	Capture string
}

// Incident1Caches are the slab caches the 5.0 shape's growth goes to, with
// their share of the bytes (beyond one mem_cgroup object and one
// kmalloc-2k object, mem_cgroup_per_node, per dying cgroup, which both
// shapes have). Caches absent from the base capture are left out and the
// shares of the others scaled up.
var Incident1Caches = []struct {
	Name  string
	Share float64
}{
	{"kmalloc-cg-4k", 0.15}, {"kmalloc-cg-1k", 0.10}, {"kmalloc-4k", 0.20}, {"kmalloc-2k", 0.10},
	{"kmalloc-1k", 0.10}, {"kmalloc-512", 0.15}, {"kmalloc-192", 0.10}, {"kmalloc-64", 0.10},
}

// incident1PercpuPerCgroup is the per-CPU memory a dying cgroup keeps, bytes.
const incident1PercpuPerCgroup = 2048

// WithDefaults returns the options with every default filled in.
func (o Incident1Options) WithDefaults() Incident1Options {
	if o.Start.IsZero() {
		o.Start = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Days <= 0 {
		o.Days = 30
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Minute
	}
	if o.CgroupsPerDay == 0 {
		o.CgroupsPerDay = 10000
	}
	if o.SUnreclaimPerWeek == 0 {
		o.SUnreclaimPerWeek = 4e9
	}
	if o.DropHour == 0 {
		o.DropHour = 4
	}
	if o.Kernel == "" {
		o.Kernel = "5.0.0-1-amd64"
		if o.Shape == Shape53 {
			o.Kernel = "5.3.0-1-amd64"
		}
	}
	if len(o.Kinds) == 0 {
		o.Kinds = []string{"meminfo", "slabinfo", "cgroups", "osrelease"}
	}
	if !slices.Contains(o.Kinds, "meminfo") {
		o.Kinds = append([]string{"meminfo"}, o.Kinds...)
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// WriteIncident1CronDir writes a cron-layout directory (see internal/source's KindCron) for
// incident 1: synthetic shape on real text. Every file is the real kernel
// text of the base capture with only numbers changed:
//
//   - cgroups: the memory line's num_cgroups grows by about CgroupsPerDay a
//     day (random increments, never negative); in the 5.3 shape it falls
//     back to 2 % of its dying part every day at DropHour;
//   - slabinfo: mem_cgroup gains one active object and kmalloc-2k one per
//     dying cgroup; in the 5.0 shape the caches of Incident1Caches grow too,
//     so that SUnreclaim grows by SUnreclaimPerWeek a week; num_objs,
//     active_objs and both slab counts grow together; dentry
//     (reclaimable) wanders a little;
//   - meminfo: SUnreclaim, SReclaimable, Slab and KReclaimable follow the
//     slab caches exactly, Percpu grows 2 KiB per dying cgroup, Cached,
//     AnonPages and Dirty wander a little (with the matching
//     Active/Inactive lines), and MemFree and MemAvailable pay for all of
//     it; when MemFree would fall below 1 % of MemTotal the page cache
//     shrinks instead;
//   - vmstat and zoneinfo (when asked for) follow the same changes in
//     pages (free pages taken from the zones with the most free first).
func WriteIncident1CronDir(dir string, opt Incident1Options) error {
	o := opt.WithDefaults()
	for _, k := range o.Kinds {
		switch k {
		case "meminfo", "slabinfo", "cgroups", "vmstat", "zoneinfo", "osrelease":
		default:
			return fmt.Errorf("incident 1: cannot generate %q files (want meminfo, slabinfo, cgroups, vmstat, zoneinfo, osrelease)", k)
		}
	}
	capPath := o.Capture
	if capPath == "" {
		var err error
		if capPath, err = findModuleFile(Incident1BaseCapture); err != nil {
			return err
		}
	}
	fsys, prov, err := capture.LoadFile(capPath)
	if err != nil {
		return err
	}
	g, err := newIncident1Gen(fsys, prov.PageSize, o)
	if err != nil {
		return fmt.Errorf("incident 1 from %s: %w", capPath, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := int(time.Duration(o.Days) * 24 * time.Hour / o.Interval)
	var zw *gzip.Writer
	var zbuf bytes.Buffer
	for i := range n {
		t := o.Start.Add(time.Duration(i) * o.Interval).In(o.Location)
		g.step(t)
		sub := dir
		if o.PerDayDirs {
			sub = filepath.Join(dir, t.Format("2006-01-02"))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		stamp := t.Format(cronLayout)
		if o.Seconds {
			stamp = t.Format(cronLayoutSecs)
		}
		for _, k := range o.Kinds {
			data := g.render(k)
			name := filepath.Join(sub, k+"_"+stamp)
			if o.Gzip {
				zbuf.Reset()
				if zw == nil {
					zw, _ = gzip.NewWriterLevel(&zbuf, gzip.BestSpeed) // the level is valid
				} else {
					zw.Reset(&zbuf)
				}
				if _, err := zw.Write(data); err != nil {
					return err
				}
				if err := zw.Close(); err != nil {
					return err
				}
				data, name = zbuf.Bytes(), name+".gz"
			}
			if err := os.WriteFile(name, data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// findModuleFile finds a file relative to the module root: from this
// source file's directory, then from the working directory upwards.
func findModuleFile(rel string) (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, d := range starts {
		for {
			p := filepath.Join(d, rel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", fmt.Errorf("incident 1: %s not found from the module root; set Incident1Options.Capture", rel)
}

type slabLine struct {
	name                                      string
	active, num, size, perSlab, pagesPerSlab  int64
	limit, batch, shared                      int64
	activeSlabs, numSlabs, sharedAvail        int64
	baseActive, baseNum, baseSlabs, slabBytes int64
}

func (s *slabLine) format() string {
	return fmt.Sprintf("%-17s %6d %6d %6d %4d %4d : tunables %4d %4d %4d : slabdata %6d %6d %6d",
		s.name, s.active, s.num, s.size, s.perSlab, s.pagesPerSlab, s.limit, s.batch, s.shared,
		s.activeSlabs, s.numSlabs, s.sharedAvail)
}

// setSlabs sets the cache's slab count and fills them (active objects a
// little below capacity).
func (s *slabLine) setSlabs(slabs int64, slack int64) {
	slabs = max(slabs, 0)
	s.numSlabs, s.activeSlabs = slabs, slabs
	s.num = max(0, s.baseNum+(slabs-s.baseSlabs)*s.perSlab)
	s.active = max(0, min(s.num, s.baseActive+(slabs-s.baseSlabs)*s.perSlab-slack))
}

// setActive sets the cache's active objects, growing the slabs as needed.
func (s *slabLine) setActive(active int64) {
	s.active = active
	s.num = max(s.baseNum, (active+s.perSlab-1)/s.perSlab*s.perSlab)
	s.numSlabs = max(s.baseSlabs, s.num/s.perSlab)
	s.activeSlabs = s.numSlabs
}

func (s *slabLine) grownBytes() int64 { return (s.numSlabs - s.baseSlabs) * s.slabBytes }

type kvLine struct {
	key   string
	base  int64
	val   int64
	unit  string // " kB" or ""
	plain bool   // vmstat: "key value"
}

type incident1Gen struct {
	o        Incident1Options
	pageSize int64
	rng      *rand.Rand

	mem      []kvLine
	memIx    map[string]int
	slabs    []*slabLine
	slabHd   []string
	slabIx   map[string]*slabLine
	cg       []string // cgroups lines
	cgMem    int      // index of the memory line
	cgFields []string // its fields
	vm       []kvLine
	vmIx     map[string]int
	zone     []string // zoneinfo lines
	zoneKV   map[string][]int
	zoneBase map[int]int64
	zfree    []zoneFree

	baseCg    int64
	dying     int64
	lastDay   int
	haveDay   bool
	dentrySl  float64
	cacheKB   float64
	anonKB    float64
	growth    []growCache
	perCgroup float64 // 5.0: bytes of Incident1Caches per dying cgroup
	release   string
}

type zoneFree struct {
	free, nrFree int // line indexes of "pages free" and "nr_free_pages"
	base         int64
}

type growCache struct {
	s     *slabLine
	share float64
}

func newIncident1Gen(fsys fs.FS, pageSize int, o Incident1Options) (*incident1Gen, error) {
	if pageSize <= 0 {
		pageSize = 4096
	}
	g := &incident1Gen{o: o, pageSize: int64(pageSize), rng: rand.New(rand.NewPCG(o.Seed, 0x1c1d))}
	read := func(name string) (string, error) {
		b, err := fs.ReadFile(fsys, name)
		return string(b), err
	}
	mi, err := read("proc/meminfo")
	if err != nil {
		return nil, err
	}
	g.memIx = map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(mi, "\n"), "\n") {
		k, rest, ok := strings.Cut(l, ":")
		f := strings.Fields(rest)
		if !ok || len(f) == 0 {
			return nil, fmt.Errorf("meminfo line %q", l)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("meminfo line %q", l)
		}
		kv := kvLine{key: k, base: v, val: v}
		if len(f) > 1 {
			kv.unit = " " + f[1]
		}
		g.memIx[k] = len(g.mem)
		g.mem = append(g.mem, kv)
	}
	for _, k := range []string{"MemTotal", "MemFree", "MemAvailable", "Cached", "SUnreclaim", "SReclaimable", "Slab"} {
		if _, ok := g.memIx[k]; !ok {
			return nil, fmt.Errorf("meminfo has no %s", k)
		}
	}
	si, err := read("proc/slabinfo")
	if err != nil {
		return nil, err
	}
	g.slabIx = map[string]*slabLine{}
	for i, l := range strings.Split(strings.TrimSuffix(si, "\n"), "\n") {
		if i < 2 {
			g.slabHd = append(g.slabHd, l)
			continue
		}
		f := strings.Fields(l)
		if len(f) != 16 {
			return nil, fmt.Errorf("slabinfo line %q", l)
		}
		var n [13]int64
		for j, x := range []int{1, 2, 3, 4, 5, 8, 9, 10, 13, 14, 15} {
			if n[j], err = strconv.ParseInt(f[x], 10, 64); err != nil {
				return nil, fmt.Errorf("slabinfo line %q", l)
			}
		}
		s := &slabLine{name: f[0], active: n[0], num: n[1], size: n[2], perSlab: n[3], pagesPerSlab: n[4],
			limit: n[5], batch: n[6], shared: n[7], activeSlabs: n[8], numSlabs: n[9], sharedAvail: n[10]}
		s.baseActive, s.baseNum, s.baseSlabs = s.active, s.num, s.numSlabs
		s.slabBytes = s.pagesPerSlab * g.pageSize
		if s.perSlab <= 0 || s.pagesPerSlab <= 0 {
			return nil, fmt.Errorf("slabinfo line %q", l)
		}
		g.slabs = append(g.slabs, s)
		g.slabIx[s.name] = s
	}
	for _, n := range []string{"mem_cgroup", "kmalloc-2k", "dentry"} {
		if g.slabIx[n] == nil {
			return nil, fmt.Errorf("slabinfo has no %s cache", n)
		}
	}
	total := 0.0
	for _, c := range Incident1Caches {
		if s := g.slabIx[c.Name]; s != nil {
			g.growth = append(g.growth, growCache{s, c.Share})
			total += c.Share
		}
	}
	for i := range g.growth {
		g.growth[i].share /= total
	}
	cgs, err := read("proc/cgroups")
	if err != nil {
		return nil, err
	}
	g.cgMem = -1
	for i, l := range strings.Split(strings.TrimSuffix(cgs, "\n"), "\n") {
		f := strings.Fields(l)
		g.cg = append(g.cg, l)
		if i > 0 && len(f) == 4 && f[0] == "memory" {
			g.cgMem, g.cgFields = i, f
			if g.baseCg, err = strconv.ParseInt(f[2], 10, 64); err != nil {
				return nil, fmt.Errorf("cgroups line %q", l)
			}
		}
	}
	if g.cgMem < 0 {
		return nil, errors.New("cgroups has no memory line")
	}
	if slices.Contains(o.Kinds, "vmstat") {
		vs, err := read("proc/vmstat")
		if err != nil {
			return nil, err
		}
		g.vmIx = map[string]int{}
		for _, l := range strings.Split(strings.TrimSuffix(vs, "\n"), "\n") {
			k, v, ok := strings.Cut(l, " ")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("vmstat line %q", l)
			}
			g.vmIx[k] = len(g.vm)
			g.vm = append(g.vm, kvLine{key: k, base: n, val: n, plain: true})
		}
	}
	if slices.Contains(o.Kinds, "zoneinfo") {
		zi, err := read("proc/zoneinfo")
		if err != nil {
			return nil, err
		}
		g.zone = strings.Split(strings.TrimSuffix(zi, "\n"), "\n")
		g.zoneKV = map[string][]int{}
		g.zoneBase = map[int]int64{}
		perNode := false
		cur := -1
		for i, l := range g.zone {
			f := strings.Fields(l)
			switch {
			case len(f) == 0:
			case f[0] == "Node":
				perNode = false
			case len(f) == 2 && f[0] == "per-node" && f[1] == "stats":
				perNode = true
			case len(f) == 3 && f[0] == "pages" && f[1] == "free":
				perNode = false
				v, _ := strconv.ParseInt(f[2], 10, 64)
				g.zfree = append(g.zfree, zoneFree{free: i, nrFree: -1, base: v})
				cur = len(g.zfree) - 1
			case len(f) == 2 && f[0] == "nr_free_pages" && cur >= 0:
				g.zfree[cur].nrFree = i
			case len(f) == 2 && perNode:
				v, err := strconv.ParseInt(f[1], 10, 64)
				if err == nil {
					g.zoneKV[f[0]] = append(g.zoneKV[f[0]], i)
					g.zoneBase[i] = v
				}
			}
		}
		slices.SortStableFunc(g.zfree, func(a, b zoneFree) int { return int(b.base - a.base) })
	}
	// Fixed cost per dying cgroup: a mem_cgroup object, a kmalloc-2k
	// object and per-CPU memory; the 5.0 shape adds the rest.
	mc, k2 := g.slabIx["mem_cgroup"], g.slabIx["kmalloc-2k"]
	fixed := float64(mc.slabBytes)/float64(mc.perSlab) + float64(k2.slabBytes)/float64(k2.perSlab) + incident1PercpuPerCgroup
	if o.CgroupsPerDay > 0 {
		g.perCgroup = max(0, float64(o.SUnreclaimPerWeek)/(7*float64(o.CgroupsPerDay))-fixed)
	}
	g.dentrySl = float64(g.slabIx["dentry"].baseSlabs)
	g.release = o.Kernel + "\n"
	return g, nil
}

func (g *incident1Gen) memGet(k string) int64 {
	if i, ok := g.memIx[k]; ok {
		return g.mem[i].val
	}
	return 0
}

// memAdd adds kB to a meminfo line when the line exists.
func (g *incident1Gen) memAdd(k string, d int64) {
	if i, ok := g.memIx[k]; ok {
		g.mem[i].val = max(0, g.mem[i].val+d)
	}
}

// step computes the snapshot at t.
func (g *incident1Gen) step(t time.Time) {
	o := g.o
	// Dying memory cgroups.
	lambda := float64(o.CgroupsPerDay) * o.Interval.Hours() / 24
	if g.haveDay {
		g.dying += int64(math.Round(lambda * (0.5 + g.rng.Float64())))
	}
	day := int(math.Floor(t.Add(-time.Duration(o.DropHour)*time.Hour).Sub(o.Start).Hours() / 24))
	if o.Shape == Shape53 && g.haveDay && day != g.lastDay {
		g.dying = int64(math.Round(float64(g.dying) * 0.02))
	}
	g.lastDay, g.haveDay = day, true
	g.cgFields[2] = strconv.FormatInt(g.baseCg+g.dying, 10)

	// Slab: the fixed cost per dying cgroup, then the 5.0 growth.
	for _, s := range g.slabs {
		s.active, s.num, s.numSlabs, s.activeSlabs = s.baseActive, s.baseNum, s.baseSlabs, s.baseSlabs
	}
	mc, k2 := g.slabIx["mem_cgroup"], g.slabIx["kmalloc-2k"]
	mc.setActive(mc.baseActive + g.dying)
	extra := make([]int64, len(g.growth)) // bytes per cache of g.growth
	if o.Shape == Shape50 {
		var grow float64
		if o.CgroupsPerDay > 0 {
			grow = float64(g.dying) * g.perCgroup
		} else {
			grow = float64(o.SUnreclaimPerWeek) * t.Sub(o.Start).Hours() / (7 * 24)
		}
		for i, c := range g.growth {
			extra[i] = int64(grow * c.share)
		}
	}
	k2extra := g.dying * k2.slabBytes / k2.perSlab
	if i := slices.IndexFunc(g.growth, func(c growCache) bool { return c.s == k2 }); i >= 0 {
		extra[i] += k2extra
	} else {
		k2.setSlabs(k2.baseSlabs+k2extra/k2.slabBytes, g.rng.Int64N(k2.perSlab))
	}
	for i, c := range g.growth {
		c.s.setSlabs(c.s.baseSlabs+extra[i]/c.s.slabBytes, g.rng.Int64N(c.s.perSlab))
	}
	// Noise: dentry (reclaimable) slabs, page cache, anonymous memory, dirty.
	d := g.slabIx["dentry"]
	g.dentrySl += 0.05*(float64(d.baseSlabs)-g.dentrySl) + g.rng.NormFloat64()*float64(d.baseSlabs)*0.005
	d.setSlabs(max(int64(g.dentrySl), d.baseSlabs*9/10), g.rng.Int64N(d.perSlab))
	dR := d.grownBytes()
	var dU int64
	for _, s := range g.slabs {
		if s != d {
			dU += s.grownBytes()
		}
	}
	baseCache := float64(g.mem[g.memIx["Cached"]].base)
	g.cacheKB += -0.05*g.cacheKB + g.rng.NormFloat64()*baseCache*0.002
	baseAnon := float64(g.memBase("AnonPages"))
	g.anonKB += -0.05*g.anonKB + g.rng.NormFloat64()*baseAnon*0.002

	for i := range g.mem {
		g.mem[i].val = g.mem[i].base
	}
	dUkB, dRkB := dU/1024, dR/1024
	dPkB := g.dying * incident1PercpuPerCgroup / 1024
	dCkB, dAkB := int64(g.cacheKB), int64(g.anonKB)
	g.memAdd("SUnreclaim", dUkB)
	g.memAdd("SReclaimable", dRkB)
	g.memAdd("KReclaimable", dRkB)
	g.memAdd("Slab", dUkB+dRkB)
	g.memAdd("Percpu", dPkB)
	g.memAdd("AnonPages", dAkB)
	g.memAdd("Inactive(anon)", dAkB)
	g.memAdd("Committed_AS", dAkB)
	g.memAdd("Dirty", int64(float64(g.memBase("Dirty"))*(g.rng.Float64()*2-1)))
	free := g.memGet("MemFree") - (dUkB + dRkB + dPkB + dCkB + dAkB)
	if floor := g.memGet("MemTotal") / 100; free < floor {
		// The page cache gives way before free memory runs out.
		dCkB -= min(floor-free, g.memGet("Cached")+dCkB)
		free = g.memGet("MemFree") - (dUkB + dRkB + dPkB + dCkB + dAkB)
	}
	g.memAdd("Cached", dCkB)
	g.memAdd("Inactive(file)", dCkB)
	g.memAdd("Inactive", dCkB+dAkB)
	g.mem[g.memIx["MemFree"]].val = max(0, free)
	g.memAdd("MemAvailable", -(dUkB + dPkB + dAkB))

	pages := func(k string) int64 { return (g.memGet(k) - g.memBase(k)) * 1024 / g.pageSize }
	if g.vm != nil {
		for i := range g.vm {
			g.vm[i].val = g.vm[i].base
		}
		for vk, mk := range vmstatFromMeminfo {
			if i, ok := g.vmIx[vk]; ok {
				g.vm[i].val = max(0, g.vm[i].base+pages(mk))
			}
		}
	}
	if g.zone != nil {
		g.zoneSet(pages)
	}
}

// vmstatFromMeminfo maps vmstat (and zoneinfo per-node) counters to the
// meminfo line they follow.
var vmstatFromMeminfo = map[string]string{
	"nr_free_pages":         "MemFree",
	"nr_slab_unreclaimable": "SUnreclaim",
	"nr_slab_reclaimable":   "SReclaimable",
	"nr_file_pages":         "Cached",
	"nr_inactive_file":      "Inactive(file)",
	"nr_zone_inactive_file": "Inactive(file)",
	"nr_anon_pages":         "AnonPages",
	"nr_inactive_anon":      "Inactive(anon)",
	"nr_zone_inactive_anon": "Inactive(anon)",
	"nr_dirty":              "Dirty",
}

func (g *incident1Gen) memBase(k string) int64 {
	if i, ok := g.memIx[k]; ok {
		return g.mem[i].base
	}
	return 0
}

// zoneSet writes the node counters and takes the free pages from the zones
// with the most free pages first.
func (g *incident1Gen) zoneSet(pages func(string) int64) {
	for k, lines := range g.zoneKV {
		mk, ok := vmstatFromMeminfo[k]
		if !ok {
			continue
		}
		for _, i := range lines {
			g.zoneLine(i, max(0, g.zoneBase[i]+pages(mk)))
		}
	}
	take := -pages("MemFree") // pages to take from the zones (negative: give)
	for _, z := range g.zfree {
		v := z.base
		if take > 0 {
			d := min(take, z.base)
			v, take = z.base-d, take-d
		} else if take < 0 {
			v, take = z.base-take, 0
		}
		g.zoneLine(z.free, v)
		if z.nrFree >= 0 {
			g.zoneLine(z.nrFree, v)
		}
	}
}

// zoneLine replaces the number that ends a zoneinfo line, keeping the
// kernel's padding of the key.
func (g *incident1Gen) zoneLine(i int, v int64) {
	l := g.zone[i]
	j := strings.LastIndexAny(l, " \t")
	g.zone[i] = l[:j+1] + strconv.FormatInt(v, 10)
}

// render returns the text of one kind of file for the current step.
func (g *incident1Gen) render(kind string) []byte {
	var b bytes.Buffer
	switch kind {
	case "meminfo":
		for _, kv := range g.mem {
			fmt.Fprintf(&b, "%-16s%8d%s\n", kv.key+":", kv.val, kv.unit)
		}
	case "slabinfo":
		for _, l := range g.slabHd {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		for _, s := range g.slabs {
			b.WriteString(s.format())
			b.WriteByte('\n')
		}
	case "cgroups":
		for i, l := range g.cg {
			if i == g.cgMem {
				l = strings.Join(g.cgFields, "\t")
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
	case "vmstat":
		for _, kv := range g.vm {
			b.WriteString(kv.key)
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(kv.val, 10))
			b.WriteByte('\n')
		}
	case "zoneinfo":
		for _, l := range g.zone {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	case "osrelease":
		b.WriteString(g.release)
	}
	return b.Bytes()
}
