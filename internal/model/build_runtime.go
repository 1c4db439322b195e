package model

// The language runtimes' garbage collectors, from the normalised
// memdoctor_runtime_* series (internal/runtimes maps each runtime's own
// names onto them). Counters give rates three ways, best first:
//
//   - over a window (a recording, or history ingested with diagnose
//     --from): the increase of each counter across the window, resets
//     (restarts) handled by summing only rises;
//   - over an interval: check reads every runtime twice, a few seconds
//     apart (check --gc-interval), and Run compares the two (Data.Earlier);
//   - over the process' life: counters since start divided by the time
//     since process_start_time_seconds (or the JVM's creation), when known.
//
// Rules judge "sustained" by requiring the lifetime average (or most of a
// window) to agree with the recent rate.

import (
	"math"
	"sort"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// Normalised runtime series names (see internal/runtimes).
const (
	RTInfo      = "memdoctor_runtime_info"
	RTGCSeconds = "memdoctor_runtime_gc_seconds_total"
	RTColl      = "memdoctor_runtime_gc_collections_total"
	RTInduced   = "memdoctor_runtime_gc_induced_total"
	RTLive      = "memdoctor_runtime_heap_live_bytes"
	rtCommitted = "memdoctor_runtime_heap_committed_bytes"
	rtLimit     = "memdoctor_runtime_heap_limit_bytes"
	rtResident  = "memdoctor_runtime_resident_bytes"
	rtLOH       = "memdoctor_runtime_heap_large_object_bytes"
	rtStart     = "memdoctor_runtime_start_time_seconds"
	rtLastCause = "memdoctor_runtime_gc_last_cause_info"
	rtCollected = "memdoctor_runtime_gc_collected_objects_total"
	rtPromoted  = "memdoctor_runtime_gc_promoted_bytes_total"
	rtAllocated = "memdoctor_runtime_gc_allocated_bytes_total"
	rtPending   = "memdoctor_runtime_gc_pending_bytes"
	rtPendLimit = "memdoctor_runtime_gc_pending_limit_bytes"
	rtLargeAllo = "memdoctor_runtime_gc_large_allocated_bytes_total"
	RTLargeTrig = "memdoctor_runtime_gc_large_triggered_total"
	rtSettings  = "memdoctor_runtime_gc_settings_info"
	rtProcess   = "memdoctor_runtime_process_info"
	rtCaller    = "memdoctor_runtime_gc_induced_caller_total"
)

// RuntimeSeries lists every normalised series, for rules' Reads.
var RuntimeSeries = []string{RTInfo, RTGCSeconds, RTColl, RTInduced, RTLive, rtCommitted, rtLimit, rtResident, rtLOH, rtStart, rtLastCause, rtCollected, rtPromoted, rtAllocated, rtPending, rtPendLimit, rtLargeAllo, RTLargeTrig, rtSettings, rtProcess, rtCaller}

// RuntimesOf builds the runtime models of a snapshot, one per target.
func RuntimesOf(s *sample.Snapshot) []Runtime {
	byTarget := map[string]*Runtime{}
	var order []string
	get := func(l sample.Labels) *Runtime {
		t := l.Get("target")
		r, ok := byTarget[t]
		if !ok {
			pid, _ := strconv.Atoi(l.Get("pid"))
			r = &Runtime{Target: t, Runtime: l.Get("runtime"), PID: pid, Comm: l.Get("comm")}
			byTarget[t] = r
			order = append(order, t)
		}
		return r
	}
	f := func(v float64) *float64 { return &v }
	for _, m := range s.Select(RTInfo) {
		r := get(m.Labels)
		r.Version, r.Source, r.Also = m.Labels.Get("version"), m.Labels.Get("source"), m.Labels.Get("also")
	}
	for _, name := range RuntimeSeries[1:] {
		for _, m := range s.Select(name) {
			r := get(m.Labels)
			switch name {
			case RTGCSeconds:
				r.GCSeconds = f(m.Value)
			case RTColl:
				switch m.Labels.Get("generation") {
				case "young":
					r.YoungCollections = f(m.Value)
				case "old":
					r.OldCollections = f(m.Value)
				case "full":
					r.FullCollections = f(m.Value)
				}
			case RTInduced:
				if r.Induced == nil {
					r.Induced = map[string]float64{}
				}
				r.Induced[m.Labels.Get("cause")] += m.Value
			case RTLive:
				r.HeapLiveBytes = f(m.Value)
			case rtCommitted:
				r.HeapCommittedBytes = f(m.Value)
			case rtLimit:
				r.HeapLimitBytes = f(m.Value)
			case rtResident:
				r.ResidentBytes = f(m.Value)
			case rtLOH:
				r.LargeObjectBytes = f(m.Value)
			case rtStart:
				if !s.Time.IsZero() && m.Value > 0 {
					r.UptimeSeconds = float64(s.Time.UnixMilli())/1000 - m.Value
				}
			case rtLastCause:
				r.LastCause = m.Labels.Get("cause")
			case rtPromoted:
				r.PromotedBytes = f(m.Value)
			case rtAllocated:
				r.AllocatedBytes = f(m.Value)
			case rtLargeAllo:
				r.LargeAllocatedBytes = f(m.Value)
			case RTLargeTrig:
				if m.Labels.Get("generation") == "old" {
					r.LargeTriggeredOld = f(m.Value)
				}
			case rtPending:
				r.GCPendingBytes = f(m.Value)
			case rtPendLimit:
				r.GCPendingLimitBytes = f(m.Value)
			case rtSettings:
				r.GCSettings = ownLabels(m.Labels)
			case rtProcess:
				r.Process = ownLabels(m.Labels)
			case rtCaller:
				if r.InducedCallers == nil {
					r.InducedCallers = map[string]float64{}
				}
				r.InducedCallers[m.Labels.Get("caller")] += m.Value
			case rtCollected:
				if m.Labels.Get("generation") == "old" {
					r.CollectedOld = f(m.Value)
				} else {
					r.CollectedYoung = f(m.Value)
				}
			}
		}
	}
	out := make([]Runtime, 0, len(order))
	for _, t := range order {
		r := byTarget[t]
		if r.UptimeSeconds > 1 {
			r.Lifetime = lifetime(r)
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// ownLabels are a runtime series' labels but the common ones.
func ownLabels(ls sample.Labels) map[string]string {
	out := map[string]string{}
	for _, l := range ls {
		switch l.Name {
		case "target", "runtime", "pid", "comm":
		default:
			out[l.Name] = l.Value
		}
	}
	return out
}

// OrZero is *p, or 0 when p is nil.
func OrZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func lifetime(r *Runtime) *GCRates {
	g := &GCRates{Seconds: r.UptimeSeconds, GCSeconds: OrZero(r.GCSeconds), Young: OrZero(r.YoungCollections),
		Old: OrZero(r.OldCollections), Full: OrZero(r.FullCollections), Induced: r.Induced,
		CollectedYoung: OrZero(r.CollectedYoung), CollectedOld: OrZero(r.CollectedOld),
		PromotedBytes: OrZero(r.PromotedBytes), AllocatedBytes: OrZero(r.AllocatedBytes),
		LargeAllocatedBytes: OrZero(r.LargeAllocatedBytes), LargeTriggeredOld: OrZero(r.LargeTriggeredOld)}
	if r.GCSeconds != nil {
		sh := *r.GCSeconds / r.UptimeSeconds
		g.GCTimeShare = &sh
	}
	return g
}

// between computes the rates from an earlier reading a to a later one b. A
// counter absent from a (a label set that appeared since) counts from 0;
// one that fell (a restart) counts from its new value.
func between(a, b *Runtime, seconds float64) *GCRates {
	inc := func(x, y *float64) float64 {
		switch {
		case y == nil:
			return 0
		case x == nil, *y < *x:
			return *y
		}
		return *y - *x
	}
	g := &GCRates{Seconds: seconds, GCSeconds: inc(a.GCSeconds, b.GCSeconds), Young: inc(a.YoungCollections, b.YoungCollections),
		Old: inc(a.OldCollections, b.OldCollections), Full: inc(a.FullCollections, b.FullCollections),
		CollectedYoung: inc(a.CollectedYoung, b.CollectedYoung), CollectedOld: inc(a.CollectedOld, b.CollectedOld),
		PromotedBytes: inc(a.PromotedBytes, b.PromotedBytes), AllocatedBytes: inc(a.AllocatedBytes, b.AllocatedBytes),
		LargeAllocatedBytes: inc(a.LargeAllocatedBytes, b.LargeAllocatedBytes), LargeTriggeredOld: inc(a.LargeTriggeredOld, b.LargeTriggeredOld)}
	if b.GCSeconds != nil && seconds > 0 {
		sh := g.GCSeconds / seconds
		g.GCTimeShare = &sh
	}
	for c, v := range b.Induced {
		if g.Induced == nil {
			g.Induced = map[string]float64{}
		}
		prev, ok := a.Induced[c]
		if !ok || v < prev {
			prev = 0
		}
		g.Induced[c] = v - prev
	}
	if a.LargeObjectBytes != nil && b.LargeObjectBytes != nil {
		d := *b.LargeObjectBytes - *a.LargeObjectBytes
		g.LargeObjectGrowthBytes = &d
	}
	if b.GCPendingBytes != nil {
		m := max(OrZero(a.GCPendingBytes), *b.GCPendingBytes)
		g.PendingMaxBytes = &m
	}
	return g
}

// IntervalRates fills the runtimes' Recent rates from the change of their
// counters since an earlier reading of the same host.
func IntervalRates(h *Host, earlier *sample.Snapshot) {
	prev := map[string]Runtime{}
	for _, r := range RuntimesOf(earlier) {
		prev[r.Target] = r
	}
	secs := h.S.Time.Sub(earlier.Time).Seconds()
	for i := range h.Runtimes {
		if a, ok := prev[h.Runtimes[i].Target]; ok && secs > 0 && h.Runtimes[i].HasGC() {
			h.Runtimes[i].Recent = between(&a, &h.Runtimes[i], secs)
		}
	}
}

// WindowRates fills the runtimes' Recent rates from a window.
func WindowRates(h *Host, w *sample.Window) {
	if w == nil {
		return
	}
	if rr, ok := currentReclaim(w); ok && rr.Seconds > 0 {
		setRates(&h.Reclaim, rr.Seconds, map[string]float64{
			"kswapd_low_wmark_hit_quickly": rr.NHits, "allocstall": rr.NStalls, "pgscan_direct": rr.NScans})
		h.Reclaim.PSISomePercent, h.Reclaim.PSIFullPercent = rr.PSISome, rr.PSIFull
	}
	for i := range h.Runtimes {
		r := &h.Runtimes[i]
		if g := windowGC(w, r.Target); g != nil {
			r.Recent = g
		}
	}
}

// GCTimeWarn is the share of time in GC that gc_time_high warns at; a
// window's parts above it are counted for that rule.
const GCTimeWarn = 0.05

// gcWindowParts is how many parts a window is cut into to judge whether GC
// time was high throughout.
const gcWindowParts = 6

func windowGC(w *sample.Window, target string) *GCRates {
	ser := func(name string, match ...string) *sample.Series {
		return joinSeries(w.Select(name, append([]string{"target", target}, match...)...))
	}
	var from, to int64 = math.MaxInt64, 0
	for _, s := range w.Series {
		if s.Labels.Get("target") != target || len(s.Points) < 2 {
			continue
		}
		from = min(from, s.Points[0].T)
		to = max(to, s.Points[len(s.Points)-1].T)
	}
	if to <= from {
		return nil
	}
	g := &GCRates{Seconds: float64(to-from) / 1000}
	if s := ser(RTGCSeconds); s != nil && len(s.Points) >= 2 {
		g.GCSeconds = Increase(s.Points)
		span := float64(s.Points[len(s.Points)-1].T-s.Points[0].T) / 1000
		if span > 0 {
			sh := g.GCSeconds / span
			g.GCTimeShare = &sh
			g.PartsAboveGCThreshold = partsAbove(s.Points, GCTimeWarn)
		}
	}
	if s := ser(RTColl, "generation", "young"); s != nil {
		g.Young = Increase(s.Points)
	}
	if s := ser(RTColl, "generation", "old"); s != nil {
		g.Old = Increase(s.Points)
	}
	if s := ser(RTColl, "generation", "full"); s != nil {
		g.Full = Increase(s.Points)
	}
	if s := ser(rtPromoted); s != nil {
		g.PromotedBytes = Increase(s.Points)
	}
	if s := ser(rtAllocated); s != nil {
		g.AllocatedBytes = Increase(s.Points)
	}
	if s := ser(rtCollected, "generation", "young"); s != nil {
		g.CollectedYoung = Increase(s.Points)
	}
	if s := ser(rtLargeAllo); s != nil {
		g.LargeAllocatedBytes = Increase(s.Points)
	}
	if s := ser(RTLargeTrig, "generation", "old"); s != nil {
		g.LargeTriggeredOld = Increase(s.Points)
	}
	if s := ser(rtCollected, "generation", "old"); s != nil {
		g.CollectedOld = Increase(s.Points)
	}
	byCause := map[string][]*sample.Series{}
	for _, s := range w.Select(RTInduced, "target", target) {
		byCause[s.Labels.Get("cause")] = append(byCause[s.Labels.Get("cause")], s)
	}
	for cause, ss := range byCause {
		if g.Induced == nil {
			g.Induced = map[string]float64{}
		}
		g.Induced[cause] = Increase(joinSeries(ss).Points)
	}
	if s := ser(rtPending); s != nil && len(s.Points) > 0 {
		m := s.Points[0].V
		for _, p := range s.Points {
			m = max(m, p.V)
		}
		g.PendingMaxBytes = &m
	}
	if s := ser(rtLOH); s != nil && len(s.Points) >= 2 {
		d := s.Points[len(s.Points)-1].V - s.Points[0].V
		g.LargeObjectGrowthBytes = &d
	}
	return g
}

// joinSeries is one runtime's series split by the labels that describe
// its process rather than name it (pid, comm, also: a scrape target is
// matched to the process owning its socket only while that process is
// among the reported ones, so its pid label comes and goes between
// samples), as one series of all their points in time order; nil for
// none. Without it a window of a busy host judged a stretch of one piece
// (or none of two points) and missed a collector that ran hot all along.
func joinSeries(ss []*sample.Series) *sample.Series {
	switch len(ss) {
	case 0:
		return nil
	case 1:
		return ss[0]
	}
	out := &sample.Series{Name: ss[0].Name, Labels: ss[0].Labels}
	for _, s := range ss {
		out.Points = append(out.Points, s.Points...)
	}
	sort.SliceStable(out.Points, func(i, j int) bool { return out.Points[i].T < out.Points[j].T })
	k := 0
	for i, p := range out.Points {
		if i > 0 && p.T == out.Points[k-1].T {
			continue // the same sample under two label sets: one reading
		}
		out.Points[k] = p
		k++
	}
	out.Points = out.Points[:k]
	return out
}

// partsAbove cuts a cumulative-seconds series into parts and returns the
// share of parts whose time share exceeds the threshold.
func partsAbove(ps []sample.Point, threshold float64) *float64 {
	n := min(gcWindowParts, len(ps)-1)
	if n < 1 {
		return nil
	}
	above := 0
	for k := 0; k < n; k++ {
		lo := k * (len(ps) - 1) / n
		hi := (k + 1) * (len(ps) - 1) / n
		secs := float64(ps[hi].T-ps[lo].T) / 1000
		if secs > 0 && Increase(ps[lo:hi+1])/secs > threshold {
			above++
		}
	}
	v := float64(above) / float64(n)
	return &v
}
