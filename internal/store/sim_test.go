package store

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// captureSnapshot collects a real capture of testdata/captures.
func captureSnapshot(tb testing.TB, name string) *sample.Snapshot {
	tb.Helper()
	fsys, prov, err := capture.LoadFile(filepath.Join("..", "..", "testdata", "captures", name))
	if err != nil {
		tb.Fatal(err)
	}
	res, err := collect.Collect(procfs.NewFSFrom(fsys, prov.PageSize), collect.Options{
		TopProcesses: 10, TopCgroups: 10, ArenaScan: true, Now: func() time.Time { return prov.Time },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return &res.Snapshot
}

// behaviour of one simulated series.
type behaviour uint8

const (
	constant  behaviour = iota
	counter             // increases by a Poisson count at the capture's average rate
	slowGauge           // changes now and then by a small step
	busyGauge           // changes at most snapshots
	noisy               // a measured duration: new float every snapshot
)

// simSeries is the evolving state of one series.
type simSeries struct {
	m    sample.Metric
	b    behaviour
	rate float64 // counter: units per second; gauges: probability of a change per snapshot
	unit float64 // smallest change
}

// sim evolves a real capture's series over time, realistically: counters
// increase at the average rate the capture shows since boot (value / uptime,
// so idle counters stay put), most gauges change slowly, byte and page
// gauges by whole pages, a few series (collector durations) are noise.
type sim struct {
	series   []simSeries
	rng      *rand.Rand
	start    time.Time
	interval time.Duration
	jitter   time.Duration // uniform extra delay of each snapshot, as a ticker sees
	i        int
}

func newSim(base *sample.Snapshot, start time.Time, interval time.Duration, seed uint64) *sim {
	uptime := 86400.0
	if bt, ok := base.Get("node_boot_time_seconds"); ok && base.Time.Unix() > int64(bt) {
		uptime = float64(base.Time.Unix()) - bt
	}
	s := &sim{rng: rand.New(rand.NewPCG(seed, 1)), start: start, interval: interval}
	for _, m := range base.Metrics {
		ss := simSeries{m: m, unit: 1}
		name := m.Name
		h := fnv.New32a()
		h.Write([]byte(m.Key()))
		class := h.Sum32() % 100
		switch {
		case isConstant(name):
			ss.b = constant
		case strings.HasSuffix(name, "_seconds") && (strings.Contains(name, "duration") || strings.Contains(name, "smaps_rollup")),
			strings.HasPrefix(name, "memdoctor_record_"):
			ss.b = noisy
		case isCounter(name):
			ss.b = counter
			ss.rate = m.Value / uptime
			if name == "node_cpu_seconds_total" || strings.HasPrefix(name, "node_pressure_") {
				ss.unit = 0.01
			}
		default:
			switch {
			case strings.HasSuffix(name, "_bytes"):
				ss.unit = 4096
			case strings.HasSuffix(name, "_ratio"):
				ss.unit = 0.01
			}
			switch {
			case m.Value == 0:
				ss.b, ss.rate = slowGauge, 0.002
			case isBusyGauge(name):
				ss.b, ss.rate = busyGauge, 0.9
			case class < 20: // slab caches, processes and cgroups that move
				ss.b, ss.rate = slowGauge, 0.3
			case class < 60:
				ss.b, ss.rate = slowGauge, 0.02
			default:
				ss.b = constant
			}
		}
		s.series = append(s.series, ss)
	}
	return s
}

func isConstant(name string) bool {
	for _, p := range []string{
		"node_sysctl_", "node_uname_info", "node_boot_time_seconds", "memdoctor_page_size_bytes",
		"memdoctor_glibc_info", "memdoctor_cgroup_info", "node_cgroups_enabled", "memdoctor_collector_success",
		"node_slabinfo_object_size_bytes", "node_slabinfo_objects_per_slab", "node_slabinfo_pages_per_slab",
		"memdoctor_slabinfo_reclaimable", "node_zoneinfo_protection_", "node_zoneinfo_min_pages",
		"node_zoneinfo_low_pages", "node_zoneinfo_high_pages", "node_zoneinfo_managed_pages",
		"node_zoneinfo_present_pages", "node_zoneinfo_spanned_pages", "node_memory_MemTotal_bytes",
		"node_memory_HugePages_", "node_memory_Hugepagesize_bytes", "node_memory_Hugetlb_bytes",
		"node_memory_DirectMap", "node_memory_VmallocTotal_bytes", "node_memory_SwapTotal_bytes",
		"node_memory_CmaTotal_bytes", "memdoctor_zoneinfo_",
	} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func isCounter(name string) bool {
	if sample.Describe(name).Kind == sample.Counter {
		return true
	}
	// vmstat events (pgfault, pgscan_*, ...) count; nr_* are gauges.
	return strings.HasPrefix(name, "node_vmstat_") && !strings.HasPrefix(name, "node_vmstat_nr_")
}

func isBusyGauge(name string) bool {
	for _, p := range []string{
		"node_memory_MemFree", "node_memory_MemAvailable", "node_memory_Cached", "node_memory_Active",
		"node_memory_Inactive", "node_memory_Dirty", "node_memory_AnonPages", "node_memory_Slab",
		"node_memory_SReclaimable", "node_memory_SUnreclaim", "node_memory_KernelStack", "node_memory_Committed_AS",
		"node_memory_Mapped", "node_memory_PageTables", "node_memory_Buffers", "node_memory_Percpu",
		"node_vmstat_nr_free_pages", "node_vmstat_nr_inactive_file", "node_vmstat_nr_active_file",
		"node_vmstat_nr_inactive_anon", "node_vmstat_nr_active_anon", "node_vmstat_nr_slab_",
		"node_vmstat_nr_file_pages", "node_vmstat_nr_anon_pages", "node_vmstat_nr_dirty",
		"node_vmstat_nr_kernel_stack", "node_vmstat_nr_page_table_pages", "node_vmstat_nr_mapped",
		"node_zoneinfo_nr_free_pages", "node_zoneinfo_nr_", "node_procs_running", "memdoctor_process_",
		"memdoctor_cgroup_memory_",
	} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// next returns the next snapshot.
func (s *sim) next() *sample.Snapshot {
	t := s.start.Add(time.Duration(s.i) * s.interval)
	if s.jitter > 0 {
		t = t.Add(time.Duration(s.rng.Int64N(int64(s.jitter))))
	}
	secs := s.interval.Seconds()
	sc := &sample.Snapshot{Time: t, Metrics: make([]sample.Metric, len(s.series))}
	for i := range s.series {
		ss := &s.series[i]
		if s.i > 0 {
			switch ss.b {
			case counter:
				if n := poisson(s.rng, ss.rate*secs/ss.unit); n > 0 {
					ss.m.Value = roundTo(ss.m.Value+float64(n)*ss.unit, ss.unit)
				}
			case slowGauge, busyGauge:
				if s.rng.Float64() < ss.rate {
					step := math.Max(ss.unit, math.Abs(ss.m.Value)*0.002*s.rng.NormFloat64())
					if s.rng.IntN(2) == 0 {
						step = -step
					}
					ss.m.Value = math.Max(0, roundTo(ss.m.Value+step, ss.unit))
				}
			case noisy:
				ss.m.Value = math.Abs(ss.m.Value*(0.8+0.4*s.rng.Float64())) + 1e-6
			}
		}
		sc.Metrics[i] = ss.m
	}
	s.i++
	return sc
}

func roundTo(v, unit float64) float64 {
	if unit == 1 {
		return math.Round(v)
	}
	if unit == 0.01 {
		return math.Round(v*100) / 100 // as /proc/stat's ticks print
	}
	return math.Round(v/unit) * unit
}

// poisson draws from Poisson(l) (normal approximation for large l).
func poisson(r *rand.Rand, l float64) int64 {
	if l <= 0 {
		return 0
	}
	if l > 30 {
		return max(0, int64(math.Round(l+math.Sqrt(l)*r.NormFloat64())))
	}
	limit, k, p := math.Exp(-l), int64(0), r.Float64()
	for p > limit {
		k++
		p *= r.Float64()
	}
	return k
}
