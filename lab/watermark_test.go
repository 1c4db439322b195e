package lab_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/compare"
	"github.com/memdoctor/memdoctor/lab"
)

// Scenario 2 (incident 3) for real: a reader streaming more file data than
// memory and parallel allocation bursts make kswapd wake again within its
// nap at watermark_scale_factor 10, and diagnose of the 1 s recording fires
// watermark_thrash and watermark_gap_small with the same counts over the
// same span (once 1.25x apart), worded as counts, not daily rates. compare
// of the two recordings reports the reclaim counters; recorded with
// --trace, both findings name the burst processes among those that stalled
// in direct reclaim, with the kernel's own count of stalls, and the kswapd
// wake-ups the trace counted; the drop in quick
// wake-ups at 200 is asserted on the counts, its interval over the parts
// of each recording (which scatter) is logged. Scenario 3 (PSI) under it:
// check in the middle of the bursts reports the kernel's PSI totals, and
// both findings give the stall share over the recording. The recorder's
// own CPU time and peak RSS are logged.
func TestWatermarkThrash(t *testing.T) {
	slowScenario(t)
	l := lab.Open(t)
	start := time.Now()
	res := l.Boot(t, lab.Run{Script: scenario(t, "watermark-thrash.sh"), Timeout: 25 * time.Minute, DiskMiB: 2048})
	t.Logf("scenario 2 (watermark thrash, two settings): %.1fs wall", time.Since(start).Seconds())
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}
	delta := func(wsf, key string) int64 {
		var sum int64
		for _, k := range strings.Split(key, "|") {
			if strings.HasSuffix(k, "*") {
				for _, name := range []string{"allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable", "allocstall_device"} {
					sum += statValue(t, res, "vm.after."+wsf, name) - statValue(t, res, "vm.before."+wsf, name)
				}
				continue
			}
			sum += statValue(t, res, "vm.after."+wsf, k) - statValue(t, res, "vm.before."+wsf, k)
		}
		return sum
	}
	hits10, hits200 := delta("10", "kswapd_low_wmark_hit_quickly"), delta("200", "kswapd_low_wmark_hit_quickly")
	t.Logf("quick kswapd wake-ups: %d at watermark_scale_factor 10, %d at 200; direct-reclaim stalls %d and %d",
		hits10, hits200, delta("10", "allocstall_*"), delta("200", "allocstall_*"))
	if hits10 < 10 {
		t.Fatalf("the workload did not make kswapd thrash at 10: %d quick wake-ups", hits10)
	}
	r := readReport(t, res, "diagnose-10.json")
	thrash, gap := r.finding("watermark_thrash"), r.finding("watermark_gap_small")
	if thrash == nil || gap == nil {
		t.Fatalf("diagnose at 10: watermark_thrash %v, watermark_gap_small %v: %+v", thrash != nil, gap != nil, r.Findings)
	}
	for _, name := range []string{"kswapd_low_wmark_hit_quickly_count", "allocstall_count", "span_seconds"} {
		a, ok1 := thrash.evidence(name)
		b, ok2 := gap.evidence(name)
		if !ok1 || !ok2 || a != b {
			t.Errorf("%s: watermark_thrash %v (%v), watermark_gap_small %v (%v)", name, a, ok1, b, ok2)
		}
	}
	if !strings.Contains(thrash.Summary, "too short a span for daily rates") || strings.Contains(thrash.Summary, "a day") {
		t.Errorf("a %s recording worded as daily rates: %s", "short", thrash.Summary)
	}
	if thrash.Severity == "critical" {
		t.Errorf("critical from a short recording: %s", thrash.Summary)
	}
	// record --trace ran the BPF tracer in the guest for the recording's
	// life: both findings name the burst processes as stalling in direct
	// reclaim, and the stalls the trace timed are the kernel's own count
	// (allocstall over the recording) within the time the tracer takes to
	// attach. The streaming reader stalls as well: its page-cache
	// allocations meet the same min watermark (cat 170 / burst 137 of 308
	// in the first run): logged, not asserted away.
	t.Logf("recorder at 10: %s", strings.TrimSpace(res.File(t, "rec-10.err")))
	stalls10 := delta("10", "allocstall_*")
	if stalls10 == 0 {
		// kswapd kept up this run (an idle host runs the guest fast: the
		// bursts then meet free pages): no one stalled, so there is no one
		// to name. Seen on an idle machine; loaded ones stalled 308 and 618
		// times.
		t.Logf("no direct-reclaim stalls at 10 this run: the stallers are not checked")
	}
	for _, f := range []*finding{thrash, gap} {
		if stalls10 == 0 {
			break
		}
		byComm := map[string]int64{}
		var sum int64
		for _, e := range f.Evidence {
			if e.Name != "direct_reclaim_staller" {
				continue
			}
			comm, rest, _ := strings.Cut(e.Text, " in ")
			_, counts, _ := strings.Cut(rest, ": ")
			var n int64
			if _, err := fmt.Sscanf(counts, "%d stalls", &n); err != nil {
				t.Errorf("%s: unreadable staller %q", f.ID, e.Text)
			}
			byComm[comm] += n
			sum += n
		}
		t.Logf("%s: direct-reclaim stalls traced by name %v, %d of the kernel's %d", f.ID, byComm, sum, stalls10)
		if !strings.Contains(f.Summary, "stalled in direct reclaim during the trace: ") {
			t.Errorf("%s summary names no staller: %s", f.ID, f.Summary)
		}
		// Who pays a handful of stalls is chance (one run: cat's 1 of 1);
		// with many, burst is among them. The phase that makes stalls
		// certain checks the naming (directStallsForCertain).
		if stalls10 >= manyStalls && (byComm["burst"] == 0 || !strings.Contains(f.Summary, "burst (")) {
			t.Errorf("%s does not name burst among %d stallers: %v; %s", f.ID, stalls10, byComm, f.Summary)
		}
		if sum > stalls10 || 5*sum < 4*stalls10 {
			t.Errorf("%s: %d stalls traced, the kernel counted %d over the recording (want 80–100 %%)", f.ID, sum, stalls10)
		}
	}

	psiUnderBursts(t, res, thrash, gap)
	// kswapd's wake-ups, counted by the trace over the recording: the
	// watermark findings carry them, the same count in both.
	w1, ok1 := thrash.evidence("kswapd_wakes_traced")
	w2, ok2 := gap.evidence("kswapd_wakes_traced")
	t.Logf("kswapd woken %.0f times during the trace at 10 (the kernel counted %d quick wake-ups)", w1, hits10)
	if !ok1 || !ok2 || w1 != w2 || w1 <= 0 {
		t.Errorf("kswapd wake-ups traced: watermark_thrash %v (%v), watermark_gap_small %v (%v); want the same count > 0", w1, ok1, w2, ok2)
	}
	// The recorder's cost: over its life, and once sampling began
	// (without starting up and attaching the tracer). Its CPU time includes
	// the direct reclaim it does itself.
	for _, wsf := range []string{"10", "200"} {
		cpu0, ran0, _ := recorderCost(t, res, "recorder.cost."+wsf+".start")
		if cpu, ran, peak := recorderCost(t, res, "recorder.cost."+wsf); ran > ran0 {
			t.Logf("recorder --trace at 1 s, watermark_scale_factor %s: %.2fs CPU over %.1fs (%.1f%% of a CPU; %.1f%% once sampling began), peak RSS %.0f MiB",
				wsf, cpu, ran, 100*cpu/ran, 100*(cpu-cpu0)/(ran-ran0), float64(peak)/(1<<20))
		}
	}

	// compare of the two recordings: the quick wake-ups per day over equal
	// parts of each, lower at 200, and each recording's counts with its
	// span. Whether the interval excludes 0 varies with the run: logged.
	var cmp compare.Result
	if err := json.Unmarshal([]byte(res.File(t, "compare.json")), &cmp); err != nil {
		t.Fatalf("compare.json: %v\n%s", err, res.File(t, "compare.err"))
	}
	t.Logf("compare:\n%s", res.File(t, "compare.txt"))
	rows := map[string]compare.Row{}
	for _, r := range cmp.Rows {
		rows[r.ID] = r
	}
	for _, id := range []string{"kswapd_low_wmark_hit_quickly", "allocstall", "pgscan_direct"} {
		r, ok := rows[id]
		if !ok {
			t.Errorf("compare has no %s row: %+v", id, cmp.Rows)
			continue
		}
		if r.Of != "part" || len(r.A) < 3 || len(r.B) < 3 {
			t.Errorf("%s: %d and %d parts (%q)", id, len(r.A), len(r.B), r.Of)
		}
		t.Logf("%s: median %.0f → %.0f a day, B − A %.0f [%.0f, %.0f], interval excludes 0: %v", id, r.MedianA, r.MedianB, r.Diff, r.Lo, r.Hi, r.Real)
	}
	// The median over parts does not follow the drop: the wake-ups come in
	// bursts, so a few parts hold most of them (191 → 117 in total went
	// with a median 100800 → 129600 a day). The totals below are what holds.
	if r := rows["kswapd_low_wmark_hit_quickly"]; r.Diff >= 0 {
		t.Logf("the median over parts did not fall (bursty wake-ups): %.0f → %.0f a day", r.MedianA, r.MedianB)
	}
	// Each recording's count, from the note: within the workload's
	// before/after delta, and fewer at 200 (109 → 65, 124 → 43, 94 → 49,
	// 138 → 81 in trials).
	counts := map[string]int64{}
	for _, n := range cmp.Notes {
		for _, g := range []string{"A", "B"} {
			if rest, ok := strings.CutPrefix(n, "group "+g+", "); ok {
				_, after, _ := strings.Cut(rest, ": ")
				var c int64
				if _, err := fmt.Sscanf(after, "%d quick kswapd wake-ups", &c); err == nil {
					counts[g] = c
				}
			}
		}
	}
	a, okA := counts["A"]
	b, okB := counts["B"]
	if !okA || !okB || a > hits10 || b > hits200 || a <= 0 {
		t.Errorf("compare's counts A %d (%v), B %d (%v); the workload's deltas %d and %d; notes:\n%s", a, okA, b, okB, hits10, hits200, strings.Join(cmp.Notes, "\n"))
	}
	if b >= a {
		t.Errorf("compare's counts do not drop at 200: %d → %d", a, b)
	}

	directStallsForCertain(t, res)
}

// psiUnderBursts checks scenario 3 (PSI) under scenario 2: check, run in
// the middle of the bursts, reports the kernel's PSI totals (between the
// two reads of /proc/pressure/memory around it) and avg60; diagnose of the
// recording at 10 gives both watermark findings the stall share over the
// recording's span, from the totals' increase: the same in both, no more
// than the kernel's totals grew around the recording, and more than 0 when
// they grew.
func psiUnderBursts(t *testing.T, res *lab.Result, thrash, gap *finding) {
	t.Helper()
	for _, wsf := range []string{"10", "200"} {
		var c struct {
			Reclaim struct {
				SomeAvg60 float64  `json:"psi_some_avg60_percent"`
				FullAvg60 float64  `json:"psi_full_avg60_percent"`
				Some      *float64 `json:"psi_some_total_seconds"`
				Full      *float64 `json:"psi_full_total_seconds"`
			} `json:"reclaim"`
		}
		if err := json.Unmarshal([]byte(res.File(t, "check-"+wsf+".json")), &c); err != nil {
			t.Fatalf("check-%s.json: %v\n%s", wsf, err, res.File(t, "check-"+wsf+".err"))
		}
		s0, f0 := psiTotals(t, res, "psi.check.before."+wsf)
		s1, f1 := psiTotals(t, res, "psi.check.after."+wsf)
		r := c.Reclaim
		if r.Some == nil || r.Full == nil || r.SomeAvg60 < 0 || r.FullAvg60 < 0 {
			t.Errorf("check at %s did not report PSI: %+v", wsf, r)
			continue
		}
		t.Logf("check during the bursts at %s: PSI some total %.3fs (kernel %.3f → %.3f), full %.3fs (%.3f → %.3f), avg60 some %.2f%% full %.2f%%",
			wsf, *r.Some, s0, s1, *r.Full, f0, f1, r.SomeAvg60, r.FullAvg60)
		const us = 1e-6 // the file's resolution
		if *r.Some < s0-us || *r.Some > s1+us || *r.Full < f0-us || *r.Full > f1+us {
			t.Errorf("check at %s: PSI totals some %.6f full %.6f outside the kernel's around it (some %.6f–%.6f, full %.6f–%.6f)",
				wsf, *r.Some, *r.Full, s0, s1, f0, f1)
		}
		if s0 > 0 && *r.Some <= 0 {
			t.Errorf("check at %s: PSI some total %v while the kernel's was %.3fs", wsf, *r.Some, s0)
		}
	}
	s0, f0 := psiTotals(t, res, "psi.before.10")
	s1, f1 := psiTotals(t, res, "psi.after.10")
	span, _ := thrash.evidence("span_seconds")
	some, okS := thrash.evidence("psi_memory_some_share_percent")
	full, okF := thrash.evidence("psi_memory_full_share_percent")
	gs, okGS := gap.evidence("psi_memory_some_share_percent")
	gf, okGF := gap.evidence("psi_memory_full_share_percent")
	t.Logf("PSI over the recording at 10: some %.2f%%, full %.2f%% of %.0fs (%.2fs and %.2fs); the kernel's totals grew %.2fs and %.2fs around it",
		some, full, span, some/100*span, full/100*span, s1-s0, f1-f0)
	if !okS || !okF || !okGS || !okGF || gs != some || gf != full {
		t.Fatalf("stall share: watermark_thrash some %v (%v) full %v (%v), watermark_gap_small some %v (%v) full %v (%v)",
			some, okS, full, okF, gs, okGS, gf, okGF)
	}
	if !strings.Contains(thrash.Summary, "tasks waited on memory ") || !strings.Contains(gap.Summary, "tasks waited on memory ") {
		t.Errorf("the stall share is not in the summaries: %s | %s", thrash.Summary, gap.Summary)
	}
	// The recording lies within the two reads of the file.
	const slack = 0.01 // s: span_seconds is to the ms
	if some/100*span > s1-s0+slack || full/100*span > f1-f0+slack || full > some {
		t.Errorf("stall share over %.0fs: some %.3f%% full %.3f%%, more than the kernel's totals grew around the recording (%.3fs, %.3fs)",
			span, some, full, s1-s0, f1-f0)
	}
	if s1 > s0 && some <= 0 {
		t.Errorf("the kernel counted %.3fs of memory stall around the recording, the finding a share of %v", s1-s0, some)
	}
}

// manyStalls is how many direct-reclaim stalls of the thrash phase make
// burst's share of them certain (loaded runs: 137 of 308).
const manyStalls = 50

// directStallsForCertain checks the scenario's last phase, where direct
// reclaim is certain (kswapd starved by a SCHED_FIFO burst on its CPU):
// the trace recorded with it names the processes that stalled, burst among
// them, with 80-100 % of the kernel's own count in all; the reader that
// streamed a tmpfs file all along is logged.
func directStallsForCertain(t *testing.T, res *lab.Result) {
	t.Helper()
	t.Logf("burst: %s; recorder: %s", strings.TrimSpace(res.File(t, "burst-rt.err")), strings.TrimSpace(res.File(t, "rec-rt.err")))
	var kernel int64
	for _, name := range []string{"allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable", "allocstall_device"} {
		kernel += statValue(t, res, "vm.after.rt", name) - statValue(t, res, "vm.before.rt", name)
	}
	byComm := map[string]float64{}
	for _, l := range strings.Split(res.File(t, "rt.om"), "\n") {
		if !strings.HasPrefix(l, "memdoctor_reclaim_trace_stalls{") || !strings.Contains(l, `kind="direct"`) {
			continue
		}
		_, rest, _ := strings.Cut(l, `comm="`)
		comm, _, _ := strings.Cut(rest, `"`)
		f := strings.Fields(l[strings.LastIndexByte(l, '}')+1:])
		if len(f) == 0 {
			t.Fatalf("unreadable line %q", l)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		byComm[comm] += v
	}
	t.Logf("direct reclaim for certain: the kernel counted %d stalls, the trace by name %v", kernel, byComm)
	if kernel == 0 {
		t.Fatalf("no direct-reclaim stall with kswapd starved: the phase did not work (%s)", res.File(t, "burst-rt.err"))
	}
	// Every process that allocates then stalls: the recorder too, writing
	// its store (785 against burst's 429 in one run), and the journal.
	var sum float64
	for _, n := range byComm {
		sum += n
	}
	if sum > float64(kernel) || 5*sum < 4*float64(kernel) {
		t.Errorf("%.0f stalls traced, the kernel counted %d (want 80-100 %%)", sum, kernel)
	}
	if byComm["burst"] == 0 {
		t.Errorf("burst not named as stalling in direct reclaim: %v", byComm)
	}
	// The tmpfs reader allocates almost nothing, yet stalled in some runs
	// (cat 204 of 1528 in one, none in two others): logged, not asserted.
	if n := byComm["cat"]; n > 0 {
		t.Logf("the tmpfs reader stalled %.0f times", n)
	}
	// diagnose of the same recording: both watermark findings name burst
	// among the processes that stalled in direct reclaim.
	r := readReport(t, res, "diagnose-rt.json")
	for _, id := range []string{"watermark_thrash", "watermark_gap_small"} {
		f := r.finding(id)
		if f == nil {
			var ids []string
			for _, f := range r.Findings {
				ids = append(ids, f.ID)
			}
			t.Errorf("diagnose of the direct-reclaim recording: %s did not fire (%s); findings %v; the recording's stall counters:\n%s",
				id, res.File(t, "diagnose-rt.err"), ids, grepLines(res.File(t, "rt.om"), "node_vmstat_allocstall_"))
			continue
		}
		var named []string
		for _, e := range f.Evidence {
			if e.Name == "direct_reclaim_staller" {
				comm, _, _ := strings.Cut(e.Text, " in ")
				named = append(named, comm)
			}
		}
		wakes, _ := f.evidence("kswapd_wakes_traced")
		t.Logf("%s on the direct-reclaim recording: stallers %v, kswapd woken %.0f times; %s", id, named, wakes, f.Summary)
		if !slices.Contains(named, "burst") {
			t.Errorf("%s does not name burst among the stallers %v: %s", id, named, f.Summary)
		}
	}
}

// grepLines returns the lines of s that start with prefix.
func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
