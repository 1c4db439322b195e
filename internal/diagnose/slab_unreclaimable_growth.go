package diagnose

// slab_unreclaimable_growth: unreclaimable slab grows over time.
//
// Mechanism: SUnreclaim only shrinks when its owners free objects, so a
// steady rise means objects accumulate: a kernel-side leak, or objects
// pinned by something that accumulates itself — dying memory cgroups before
// 5.3 pinned their own slab caches (incident 1: +4 GB a week to 60 GB).
//
// Method: Theil–Sen slope and Mann–Kendall test of SUnreclaim within the
// newest boot (the daily cycle removed and the test corrected for
// autocorrelation, as in every trend fit: fitTrend in trend.go); the slab
// caches whose size grew most over the same span (node_slabinfo objects ×
// object size, or the slabs' pages when memdoctor recorded them) name
// where it went; where the kernel has /proc/allocinfo
// (6.10+ with CONFIG_MEM_ALLOC_PROFILING and vm.mem_profiling on), the
// kernel call sites whose live allocations grew most name the code that
// holds it (memdoctor records the 40 largest sites per sample).
//
// Fires: a significant rise (p < 0.01) of at least 0.1 % of MemTotal per
// day and 64 MiB over the window, with 95 % confidence (the end of the
// slope's 90 % interval nearer zero passes both: fit.Limit in trend.go);
// critical once SUnreclaim passes 10 % of MemTotal. Needs 6 hours and 12
// points in the newest boot.
//
// Known false positives: a host filling network or file caches it keeps
// for good (large socket buffers, inotify watches); the cache names say so.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

// The rule fires from a growth of this share of MemTotal per day and at
// least slabMinGrowth bytes in all.
const (
	slabMinShareOfTotalPerDay = 0.001
	slabMinGrowth             = 64 << 20
)

type slabUnreclaimableGrowth struct{}

func init() { register(slabUnreclaimableGrowth{}) }

func (slabUnreclaimableGrowth) Meta() Meta {
	return Meta{ID: "slab_unreclaimable_growth", Trend: true, Title: "unreclaimable slab growing over time",
		Needs: []Need{{"node_memory_SUnreclaim_bytes", "record /proc/meminfo over time"}, {"node_memory_MemTotal_bytes", "record /proc/meminfo over time"}},
		Reads: []string{"node_memory_MemTotal_bytes", "node_boot_time_seconds", "memdoctor_slabinfo_size_bytes",
			"node_slabinfo_objects", "node_slabinfo_object_size_bytes", "memdoctor_slabinfo_reclaimable", "memdoctor_allocinfo_bytes"},
		// growingCaches and growingSites: the first and last point of the
		// last segment, lastValue: the last point.
		EndsOnly: []string{"memdoctor_slabinfo_size_bytes", "node_slabinfo_objects", "node_slabinfo_object_size_bytes", "memdoctor_slabinfo_reclaimable",
			"memdoctor_allocinfo_bytes"},
		Charts:    []string{ChartSlabVsCgroups, ChartMemoryCategories},
		Prefilter: &Prefilter{About: "SUnreclaim's growth per day, fitted and of its daily floor, against MemTotal", Queries: slabGrowthQueries, Score: slabGrowthScore},
		Alerts:    slabGrowthAlerts,
		Doc:       "SUnreclaim grows, attributed to the slab caches that grew"}
}

// slabGrowthQueries: SUnreclaim's growth per day, fitted over the range
// and, over four days or more, of its daily floor.
func slabGrowthQueries(a PrefilterArgs) []PromQuery {
	su := sel("node_memory_SUnreclaim_bytes", a.Match)
	qs := []PromQuery{{"slope", byInstance("deriv(" + su + "[" + a.Window() + "]) * 86400")}}
	if a.Range >= 4*24*time.Hour {
		qs = append(qs, PromQuery{"floor", byInstance(dailyFloorGrowth(su))})
	}
	return qs
}

func slabGrowthScore(v PrefilterValues) float64 {
	share := float64(slabMinShareOfTotalPerDay)
	return max(v.V("slope"), v.V("floor")) / (share * v.Total)
}

func slabGrowthAlerts(o AlertOptions) []Alert {
	su, total := sel("node_memory_SUnreclaim_bytes", o.Match), sel("node_memory_MemTotal_bytes", o.Match)
	share := float64(slabMinShareOfTotalPerDay)
	return []Alert{{Name: "MemdoctorSlabUnreclaimableGrowing", For: "1h", Severity: "warning",
		Expr: fmt.Sprintf("%s\n  > %s * %s\nand\n%s * 3 >= %s", dailyFloorGrowth(su), promNum(share), total,
			dailyFloorGrowth(su), promNum(slabMinGrowth)),
		Summary: fmt.Sprintf("unreclaimable slab on {{ $labels.instance }} grows by more than %s%% of its memory a day", promNum(100*share))}}
}

func (slabUnreclaimableGrowth) Eval(in *Input) []model.Finding {
	w := in.Window
	if w == nil {
		return nil
	}
	if !windowUsable(in, "slab_unreclaimable_growth", "node_memory_SUnreclaim_bytes", "node_memory_MemTotal_bytes") {
		return nil
	}
	seg := model.LastSegment(w)
	su := model.Within(w.Get("node_memory_SUnreclaim_bytes"), seg)
	if len(su) < declineMinPoints || time.Duration(su[len(su)-1].T-su[0].T)*time.Millisecond < declineMinSpan {
		in.Note("slab_unreclaimable_growth", fmt.Sprintf("%d samples over %s since the last boot: too little to fit a trend", len(su), spanText(su)), "record longer")
		return nil
	}
	f := fitTrend(su)
	total := lastValue(w.Get("node_memory_MemTotal_bytes"))
	days := model.Span{From: su[0].T, To: su[len(su)-1].T}.Days()
	grown := f.Slope * days
	if !f.OK || f.P >= 0.01 || f.Slope <= 0 || total <= 0 || f.Slope < slabMinShareOfTotalPerDay*total || grown < slabMinGrowth {
		return nil
	}
	// And as fast as that with confidence, not only on the fitted slope.
	lim, ok := f.Limit()
	if !ok || lim < slabMinShareOfTotalPerDay*total || lim*days < slabMinGrowth {
		return nil
	}
	last := su[len(su)-1].V
	sev := model.Warning
	if last >= 0.1*total {
		sev = model.Critical
	}
	fd := model.Finding{ID: "slab_unreclaimable_growth", Severity: sev, Subject: subject(w, "host"),
		Summary: fmt.Sprintf("unreclaimable slab grows %s per day (p=%s, %s over %s), now %s (%.1f%% of memory)",
			format.Bytes(int64(f.Slope)), format.Number(f.P), format.Bytes(int64(grown)), spanText(su), format.Bytes(int64(last)), 100*last/total),
		Evidence: []model.Evidence{
			ev("slab_unreclaimable_slope_bytes_per_day", f.Slope, "bytes_per_day"),
			ev("slab_unreclaimable_slope_limit_bytes_per_day", lim, "bytes_per_day"),
			ev("mann_kendall_p", f.P, ""),
			ev("slab_unreclaimable_bytes", last, "bytes"),
			ev("slab_unreclaimable_growth_bytes", grown, "bytes"),
			ev("capacity_lost_bytes_per_week", 7*f.Slope, "bytes"),
		},
	}
	for i, c := range growingCaches(in, seg) {
		if i == 5 {
			break
		}
		fd.Evidence = append(fd.Evidence, evText("cache", fmt.Sprintf("%s +%s (now %s%s)", c.name, format.Bytes(int64(c.growth)), format.Bytes(int64(c.now)), c.kind)))
	}
	var named []string
	for i, c := range growingSites(in, seg) {
		if i == 5 {
			break
		}
		fd.Evidence = append(fd.Evidence, evText("call_site", fmt.Sprintf("%s +%s (now %s)", c.name, format.Bytes(int64(c.growth)), format.Bytes(int64(c.now)))))
		if i < 3 {
			named = append(named, fmt.Sprintf("%s +%s", c.name, format.Bytes(int64(c.growth))))
		}
	}
	if len(named) > 0 {
		fd.Summary += "; kernel call sites that grew (/proc/allocinfo): " + strings.Join(named, ", ")
	}
	fd.Remedies = []model.Remedy{
		{Title: "check for dying memory cgroups pinning slab (see " + dyingCgroups{}.Meta().ID + "), and which caches grow",
			Commands: []string{"grep memory /proc/cgroups", "sudo slabtop -o -s c | head -20"},
			Risk:     "none (read-only)"},
		{Title: "on kernels before 5.3, dying cgroups pin their slab caches: upgrading ends that source",
			Risk: "a kernel upgrade"},
	}
	return []model.Finding{fd}
}

type cacheGrowth struct {
	name        string
	growth, now float64
	kind        string
}

// growingSites ranks the kernel's allocation call sites (/proc/allocinfo)
// by the growth of their live bytes over the span; a site is named
// "func (file:line [module])". A site that entered the recorded top sites
// during the span grew from below them: its growth is counted from its
// first point.
func growingSites(in *Input, sp model.Span) []cacheGrowth {
	var out []cacheGrowth
	for _, s := range in.Window.Select("memdoctor_allocinfo_bytes") {
		ps := model.Within(s, sp)
		if len(ps) < 2 {
			continue
		}
		name := s.Labels.Get("func") + " (" + s.Labels.Get("site")
		if m := s.Labels.Get("module"); m != "" {
			name += " [" + m + "]"
		}
		out = append(out, cacheGrowth{name: name + ")", growth: ps[len(ps)-1].V - ps[0].V, now: ps[len(ps)-1].V})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].growth > out[j].growth })
	for len(out) > 0 && out[len(out)-1].growth <= 0 {
		out = out[:len(out)-1]
	}
	return out
}

// growingCaches ranks slab caches by their growth over the span.
func growingCaches(in *Input, sp model.Span) []cacheGrowth {
	w := in.Window
	var out []cacheGrowth
	size := w.Select("memdoctor_slabinfo_size_bytes")
	if len(size) > 0 {
		for _, s := range size {
			ps := model.Within(s, sp)
			if len(ps) < 2 {
				continue
			}
			c := cacheGrowth{name: s.Labels.Get("slab"), growth: ps[len(ps)-1].V - ps[0].V, now: ps[len(ps)-1].V}
			if r := w.Get("memdoctor_slabinfo_reclaimable", "slab", c.name); r != nil {
				if lastValue(r) == 1 {
					c.kind = ", reclaimable"
				} else {
					c.kind = ", unreclaimable"
				}
			}
			out = append(out, c)
		}
	} else {
		for _, s := range w.Select("node_slabinfo_objects") {
			name := s.Labels.Get("slab")
			objSize := lastValue(w.Get("node_slabinfo_object_size_bytes", "slab", name))
			ps := model.Within(s, sp)
			if len(ps) < 2 || objSize == 0 {
				continue
			}
			out = append(out, cacheGrowth{name: name, growth: (ps[len(ps)-1].V - ps[0].V) * objSize, now: ps[len(ps)-1].V * objSize})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].growth > out[j].growth })
	for len(out) > 0 && out[len(out)-1].growth <= 0 {
		out = out[:len(out)-1]
	}
	return out
}
