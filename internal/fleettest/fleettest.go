// Package fleettest generates a synthetic fleet's node_exporter history
// with pathologies injected on known hosts, as OpenMetrics text that
// promtool turns into TSDB blocks for a real Prometheus. A manifest lists
// every host, its labels and what was injected, so a test can check that
// a fleet diagnosis finds exactly those hosts.
//
// Every host has a daily usage cycle, noise that wanders over hours, an
// occasional reboot (counters and kernel state start again), and one of
// two kernels. The pathologies follow the mechanisms memdoctor's rules
// name:
//
//   - dying_cgroups_leak: hosts on a kernel before 5.3 that run one memory
//     cgroup per job never free the removed cgroups: the memory cgroup
//     count climbs by about 10 000 a day and each pins slab, so SUnreclaim
//     grows 400 MB a day and available memory falls by as much;
//   - slab_leak: unreclaimable slab grows 150 MB a day on a host with
//     plenty of memory available (a driver leak: no cgroups involved);
//   - watermark_thrash: reclaim bursts cross the watermarks: over a
//     thousand quick kswapd wake-ups and about 80 direct-reclaim stalls a
//     day;
//   - memory_above_baseline: for the last 18 hours memory use sits 20 % of
//     the host's memory above its usual daily peak.
//
// Hosts on 5.3 that run jobs show the healthy shape of the same workload:
// the cgroup count climbs during the day and falls back every night.
package fleettest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Pathologies the generator injects.
const (
	DyingCgroupsLeak    = "dying_cgroups_leak"
	SlabLeak            = "slab_leak"
	WatermarkThrash     = "watermark_thrash"
	MemoryAboveBaseline = "memory_above_baseline"
)

// Expected maps each pathology to the memdoctor rules that must fire on
// the host (and only there).
var Expected = map[string][]string{
	DyingCgroupsLeak:    {"available_memory_decline", "dying_cgroups", "slab_unreclaimable_growth"},
	SlabLeak:            {"slab_unreclaimable_growth"},
	WatermarkThrash:     {"watermark_thrash"},
	MemoryAboveBaseline: {"memory_baseline_exceeded"},
}

// Tolerated maps a pathology to rules that may fire on the host as its
// consequence, depending on the day the data ends: a leak raises used
// memory, so today's peak may pass the median of the previous 14 daily
// peaks (memory_baseline_exceeded is right to say so) or not yet.
var Tolerated = map[string][]string{
	DyingCgroupsLeak: {"memory_baseline_exceeded"},
	SlabLeak:         {"memory_baseline_exceeded"},
}

// JudgedRules are the rules the manifest speaks for: on every other host
// none of them may fire.
var JudgedRules = []string{"available_memory_decline", "dying_cgroups", "memory_baseline_exceeded", "slab_unreclaimable_growth", "watermark_thrash"}

// Kernel releases of the fleet.
const (
	Kernel50 = "5.0.0-37-generic"
	Kernel53 = "5.3.0-26-generic"
)

// Options shape the fleet.
type Options struct {
	Hosts int
	// End is the last sample's time (truncated to Interval); the data
	// spans Days before it.
	End      time.Time
	Days     int
	Interval time.Duration
	// Chunk is the time span of each output file (default one day): promtool
	// reads its whole input once per two-hour block, so smaller files keep
	// backfilling linear.
	Chunk time.Duration
	Seed  uint64
}

func (o Options) withDefaults() Options {
	if o.Hosts <= 0 {
		o.Hosts = 60
	}
	if o.Days <= 0 {
		o.Days = 15
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Minute
	}
	if o.Chunk <= 0 {
		o.Chunk = 24 * time.Hour
	}
	if o.End.IsZero() {
		o.End = time.Now().Add(-2 * time.Hour)
	}
	o.End = o.End.UTC().Truncate(o.Interval)
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Host is one generated host.
type Host struct {
	Instance    string   `json:"instance"`
	Rack        string   `json:"rack"`
	Release     string   `json:"release"`
	Role        string   `json:"role"`
	MemTotal    float64  `json:"mem_total_bytes"`
	Pathologies []string `json:"pathologies"`
	// Expect lists the rules that must fire on the host (sorted).
	Expect []string `json:"expect"`
	// Tolerate lists rules that may fire on the host as a consequence of
	// its pathology (see Tolerated), and on no other host.
	Tolerate []string `json:"tolerate,omitempty"`
	// Reboots are the reboot times inside the window.
	Reboots []time.Time `json:"reboots,omitempty"`

	usage    float64 // usual share of memory in use
	bootTime float64 // seconds, before the window
	rebootAt []int   // step indexes
}

// Manifest describes a generated fleet.
type Manifest struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Interval string    `json:"interval"`
	Seed     uint64    `json:"seed"`
	Hosts    []Host    `json:"hosts"`
	Files    []string  `json:"files"`
	Samples  int64     `json:"samples"`
}

// WithPathology returns the instances with a pathology.
func (m *Manifest) WithPathology(p string) []string {
	var out []string
	for _, h := range m.Hosts {
		if slices.Contains(h.Pathologies, p) {
			out = append(out, h.Instance)
		}
	}
	return out
}

// Expecting returns the instances a rule must fire on.
func (m *Manifest) Expecting(rule string) []string {
	var out []string
	for _, h := range m.Hosts {
		if slices.Contains(h.Expect, rule) {
			out = append(out, h.Instance)
		}
	}
	return out
}

// Check compares the instances a rule fired on with the manifest: every
// host that must have it, and otherwise only hosts that may. It returns
// what is wrong, or "".
func (m *Manifest) Check(rule string, fired []string) string {
	must, may := map[string]bool{}, map[string]bool{}
	for _, h := range m.Hosts {
		if slices.Contains(h.Expect, rule) {
			must[h.Instance] = true
		}
		if slices.Contains(h.Tolerate, rule) {
			may[h.Instance] = true
		}
	}
	var extra, missing []string
	for _, i := range fired {
		if !must[i] && !may[i] {
			extra = append(extra, i)
		}
		delete(must, i)
	}
	for i := range must {
		missing = append(missing, i)
	}
	sort.Strings(missing)
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("%s fired on hosts without it injected: %v; missed: %v", rule, extra, missing)
}

// Fleet is a planned fleet, ready to write.
type Fleet struct {
	opt   Options
	start time.Time
	steps int
	Hosts []*Host
}

// Plan assigns kernels, roles, pathologies and reboots (deterministic in
// the seed).
func Plan(opt Options) *Fleet {
	o := opt.withDefaults()
	f := &Fleet{opt: o}
	f.steps = int(time.Duration(o.Days)*24*time.Hour/o.Interval) + 1
	f.start = o.End.Add(-time.Duration(f.steps-1) * o.Interval)
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	var old, newer []*Host
	for i := range o.Hosts {
		rack := i / 10
		h := &Host{Instance: fmt.Sprintf("host-%04d:9100", i), Rack: fmt.Sprintf("r%02d", rack), MemTotal: 64 << 30, Role: "db"}
		if rack%3 == 2 && rack%10 >= 3 {
			h.MemTotal = 128 << 30
		}
		if rack%10 < 3 {
			h.Release = Kernel50
			old = append(old, h)
		} else {
			h.Release = Kernel53
			newer = append(newer, h)
		}
		if rng.Float64() < 0.45 {
			h.Role = "game"
		}
		h.usage = 0.45 + 0.15*rng.Float64()
		h.bootTime = float64(f.start.Unix()) - 86400*(10+90*rng.Float64())
		f.Hosts = append(f.Hosts, h)
	}
	// Kernels before 5.3 leak on every host that runs a cgroup per job.
	for _, h := range old {
		if h.Role == "game" {
			h.Pathologies = append(h.Pathologies, DyingCgroupsLeak)
			h.usage = 0.60
		}
	}
	pick := func(from []*Host, n int, p string) {
		var free []*Host
		for _, h := range from {
			if len(h.Pathologies) == 0 {
				free = append(free, h)
			}
		}
		rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		for _, h := range free[:min(n, len(free))] {
			h.Pathologies = append(h.Pathologies, p)
		}
	}
	pick(newer, max(2, o.Hosts/30), SlabLeak)
	pick(f.Hosts, max(2, o.Hosts/25), WatermarkThrash)
	pick(f.Hosts, max(2, o.Hosts/25), MemoryAboveBaseline)
	forced := false
	for _, h := range f.Hosts {
		sick := len(h.Pathologies) > 0
		switch {
		case sick && h.Pathologies[0] == SlabLeak:
			h.usage = 0.35 // plenty available: the decline is far from exhaustion
		case sick && h.Pathologies[0] == MemoryAboveBaseline:
			h.usage = 0.50
		}
		var at int
		switch {
		case !forced && sick && h.Pathologies[0] == DyingCgroupsLeak:
			at, forced = f.steps*3/10, true // one leaking host rebooted: only the newest boot counts
		case rng.Float64() < 0.15:
			if sick {
				at = 1 + rng.IntN(f.steps*35/100)
			} else {
				// Anywhere, the last days included: a host that booted
				// recently fills its memory and its cgroups climb until the
				// first nights free them, and no rule may call that a leak.
				at = 1 + rng.IntN(max(1, f.steps-1))
			}
		}
		if at > 0 {
			h.rebootAt = []int{at}
			h.Reboots = []time.Time{f.start.Add(time.Duration(at) * o.Interval)}
		}
		seen := map[string]bool{}
		for _, p := range h.Pathologies {
			for _, r := range Expected[p] {
				if !seen[r] {
					seen[r] = true
					h.Expect = append(h.Expect, r)
				}
			}
		}
		sort.Strings(h.Expect)
		for _, p := range h.Pathologies {
			for _, r := range Tolerated[p] {
				if !seen[r] {
					seen[r] = true
					h.Tolerate = append(h.Tolerate, r)
				}
			}
		}
		sort.Strings(h.Tolerate)
	}
	return f
}

// Start is the first sample's time.
func (f *Fleet) Start() time.Time { return f.start }

// metric indexes.
const (
	mTotal = iota
	mAvail
	mSUnreclaim
	mCgroups
	mBoot
	mHits
	mStalls
	mScans
	mUname
	nMetrics
)

var metricNames = [nMetrics]string{"node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes", "node_memory_SUnreclaim_bytes",
	"node_cgroups_cgroups", "node_boot_time_seconds", "node_vmstat_kswapd_low_wmark_hit_quickly", "node_vmstat_allocstall_normal",
	"node_vmstat_pgscan_direct", "node_uname_info"}

var metricTypes = [nMetrics]string{"gauge", "gauge", "gauge", "gauge", "gauge", "unknown", "unknown", "unknown", "gauge"}

var metricHelp = [nMetrics]string{"Memory information field MemTotal_bytes.", "Memory information field MemAvailable_bytes.",
	"Memory information field SUnreclaim_bytes.", "Current cgroup number of the subsystem.", "Node boot time, in unixtime.",
	"/proc/vmstat information field kswapd_low_wmark_hit_quickly.", "/proc/vmstat information field allocstall_normal.",
	"/proc/vmstat information field pgscan_direct.", "Labeled system information as provided by the uname system call."}

// state is one host's evolving state.
type state struct {
	h              *Host
	rng            *rand.Rand
	ar             float64
	boot           float64
	bootStep       int
	cg             float64
	hits, stalls   float64
	scans          float64
	labels, uname  []byte
	subsysMemLabel []byte
}

const day = 86400.0

func (f *Fleet) newState(i int) *state {
	h := f.Hosts[i]
	s := &state{h: h, rng: rand.New(rand.NewPCG(f.opt.Seed, uint64(i)+1)), boot: h.bootTime, bootStep: 0}
	s.labels = []byte(fmt.Sprintf(`instance="%s",job="node",rack="%s"`, h.Instance, h.Rack))
	s.subsysMemLabel = []byte(fmt.Sprintf(`instance="%s",job="node",rack="%s",subsys_name="memory"`, h.Instance, h.Rack))
	s.uname = []byte(fmt.Sprintf(`domainname="(none)",instance="%s",job="node",machine="x86_64",nodename="%s",rack="%s",release="%s",sysname="Linux",version="#1 SMP"`,
		h.Instance, h.Instance[:len(h.Instance)-5], h.Rack, h.Release))
	s.hits = float64(s.rng.IntN(500))
	s.stalls = float64(s.rng.IntN(20))
	s.scans = s.stalls * 900
	s.cg = 120
	return s
}

func (s *state) has(p string) bool {
	for _, q := range s.h.Pathologies {
		if q == p {
			return true
		}
	}
	return false
}

// step advances the host to step k at time t (seconds) and fills v.
func (s *state) step(k int, t float64, start float64, end float64, interval float64, v *[nMetrics]float64) {
	h := s.h
	for _, r := range h.rebootAt {
		if r == k {
			s.boot = t - 60
			s.bootStep = k
			s.hits, s.stalls, s.scans = 0, 0, 0
			s.cg = 120
			s.ar = 0
		}
	}
	since := math.Max(start, s.boot)
	age := (t - since) / day // days the current boot has run inside the window
	hour := math.Mod(t, day) / 3600
	cycle := math.Sin(2 * math.Pi * (hour - 8) / 24) // peak at 14:00 UTC
	s.ar = 0.97*s.ar + 0.0025*s.rng.NormFloat64()    // stationary sd ≈ 1 %
	use := h.usage + 0.04*cycle + s.ar + 0.002*s.rng.NormFloat64()
	sunr := 300e6 + 5e6*s.rng.NormFloat64()
	switch {
	case s.has(DyingCgroupsLeak):
		s.cg += 10000 * interval / day * (0.5 + s.rng.Float64())
		sunr += 400e6 * age
	case h.Role == "game": // 5.3 and later: freed every night at 04:00
		if math.Mod(hour-4+24, 24) < interval/3600 {
			s.cg = 200 + 20*s.rng.Float64()
		}
		s.cg += 3000 * interval / day * (0.5 + s.rng.Float64())
		sunr += (s.cg - 200) * 2048
	default:
		s.cg = 120 + float64(s.rng.IntN(5))
	}
	if s.has(SlabLeak) {
		sunr += 150e6 * age
	}
	if s.has(MemoryAboveBaseline) && t > end-18*3600 {
		use += 0.20
	}
	avail := h.MemTotal*(1-use) - (sunr - 300e6)
	// Reclaim: quick kswapd wake-ups and stalls, mostly at the daily peak.
	hitRate, stallRate := 3.0, 0.3
	if s.has(WatermarkThrash) {
		hitRate, stallRate = 1500, 80
	}
	peak := 0.5 + cycle // more reclaim when busy
	s.hits += poisson(s.rng, hitRate*interval/day*peak)
	st := poisson(s.rng, stallRate*interval/day*peak)
	s.stalls += st
	s.scans += st*900 + poisson(s.rng, 2)
	v[mTotal] = h.MemTotal
	v[mAvail] = math.Round(avail/1024) * 1024
	v[mSUnreclaim] = math.Round(sunr/1024) * 1024
	v[mCgroups] = math.Round(s.cg)
	v[mBoot] = math.Round(s.boot)
	v[mHits] = s.hits
	v[mStalls] = s.stalls
	v[mScans] = s.scans
	v[mUname] = 1
}

// poisson draws from a Poisson distribution (normal approximation above
// 30).
func poisson(r *rand.Rand, mean float64) float64 {
	if mean <= 0 {
		return 0
	}
	if mean > 30 {
		return math.Max(0, math.Round(mean+math.Sqrt(mean)*r.NormFloat64()))
	}
	l, k, p := math.Exp(-mean), 0.0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Write writes the fleet into dir as OpenMetrics files, one per Chunk,
// plus manifest.json, and returns the manifest.
func (f *Fleet) Write(dir string) (*Manifest, error) {
	o := f.opt
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	states := make([]*state, len(f.Hosts))
	for i := range f.Hosts {
		states[i] = f.newState(i)
	}
	m := &Manifest{Start: f.start, End: o.End, Interval: o.Interval.String(), Seed: o.Seed}
	perChunk := max(1, int(o.Chunk/o.Interval))
	vals := make([][][nMetrics]float64, len(f.Hosts))
	for i := range vals {
		vals[i] = make([][nMetrics]float64, perChunk)
	}
	start, end, iv := float64(f.start.Unix()), float64(o.End.Unix()), o.Interval.Seconds()
	for c, sp := range f.spans(o.Chunk) {
		k0, n := sp[0], sp[1]
		for i, s := range states {
			for j := range n {
				t := start + float64(k0+j)*iv
				s.step(k0+j, t, start, end, iv, &vals[i][j])
			}
		}
		name := fmt.Sprintf("fleet-%03d.om", c)
		cnt, err := writeChunk(filepath.Join(dir, name), states, vals, n, int64(start)+int64(k0)*int64(iv), int64(iv))
		if err != nil {
			return nil, err
		}
		m.Samples += cnt
		m.Files = append(m.Files, name)
	}
	return f.saveManifest(dir, m)
}

func writeChunk(path string, states []*state, vals [][][nMetrics]float64, n int, t0, iv int64) (int64, error) {
	fh, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	var cnt int64
	var buf []byte
	for m := range nMetrics {
		name := metricNames[m]
		_, _ = fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, metricHelp[m], name, metricTypes[m]) // bufio keeps the error for Flush
		for i, s := range states {
			lbl := s.labels
			switch m {
			case mCgroups:
				lbl = s.subsysMemLabel
			case mUname:
				lbl = s.uname
			}
			for j := range n {
				buf = append(buf[:0], name...)
				buf = append(buf, '{')
				buf = append(buf, lbl...)
				buf = append(buf, "} "...)
				buf = strconv.AppendFloat(buf, vals[i][j][m], 'f', -1, 64)
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, t0+int64(j)*iv, 10)
				buf = append(buf, '\n')
				_, _ = w.Write(buf)
				cnt++
			}
		}
	}
	_, _ = w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		_ = fh.Close()
		return 0, err
	}
	return cnt, fh.Close()
}

// LoadManifest reads dir/manifest.json.
func LoadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	return &m, nil
}

// Window returns host i's whole history as a window, generated in memory
// exactly as Write writes it (for checking the manifest against the rules
// without a Prometheus).
func (f *Fleet) Window(i int) *sample.Window {
	o := f.opt
	s := f.newState(i)
	h := f.Hosts[i]
	series := make([]*sample.Series, nMetrics)
	base := sample.L("rack", h.Rack)
	for m := range nMetrics {
		ls := base
		switch m {
		case mCgroups:
			ls = sample.L("rack", h.Rack, "subsys_name", "memory")
		case mUname:
			ls = sample.L("rack", h.Rack, "release", h.Release, "sysname", "Linux", "machine", "x86_64")
		}
		series[m] = &sample.Series{Name: metricNames[m], Labels: ls, Points: make([]sample.Point, 0, f.steps)}
	}
	start, end, iv := float64(f.start.Unix()), float64(o.End.Unix()), o.Interval.Seconds()
	var v [nMetrics]float64
	for k := range f.steps {
		t := start + float64(k)*iv
		s.step(k, t, start, end, iv, &v)
		for m := range nMetrics {
			series[m].Points = append(series[m].Points, sample.Point{T: int64(t) * 1000, V: v[m]})
		}
	}
	w := &sample.Window{Instance: h.Instance, From: f.start, To: o.End}
	for _, s := range series {
		w.Add(s)
	}
	return w
}

// WriteInstancesOM writes an OpenMetrics page of n instances with one
// sample each (a fleet-wide instant query saved as text): the input of
// `diagnose --from` at scale. A write error stays in the buffer and is
// returned by its Flush.
func WriteInstancesOM(w io.Writer, n int) error {
	bw := bufio.NewWriter(w)
	_, _ = fmt.Fprintln(bw, "# TYPE node_memory_MemAvailable_bytes gauge")
	for i := range n {
		_, _ = fmt.Fprintf(bw, "node_memory_MemAvailable_bytes{instance=\"host-%06d:9100\",job=\"node\"} %d 1700000000.000\n", i, 1_000_000_000+i)
	}
	_, _ = fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

// saveManifest adds the fleet's hosts to m and writes it as dir's
// manifest.json.
func (f *Fleet) saveManifest(dir string, m *Manifest) (*Manifest, error) {
	for _, h := range f.Hosts {
		m.Hosts = append(m.Hosts, *h)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644)
}
