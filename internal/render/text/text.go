// Package text renders for the terminal: a readable report of a diagnosis
// (check, diagnose, fleet scans, comparisons), every line on stderr, and a
// stable JSON document.
package text

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// JSON writes the report as indented JSON (see WriteJSON).
func JSON(w io.Writer, r *model.Report) error { return WriteJSON(w, r) }

// Options control the terminal report.
type Options struct {
	// Color enables ANSI colour (only on a terminal, never with NO_COLOR).
	Color bool
	// Top limits the table rows per section.
	Top int
	// Sort is the process ranking (pss when empty).
	Sort string
}

type printer struct {
	w     io.Writer
	color bool
	err   error
}

func (p *printer) f(format string, a ...any) {
	if p.err != nil {
		return
	}
	// Values come from processes, labels and files memdoctor does not
	// control: every string among them is escaped, only our own colour
	// codes and paragraphs (Trusted) pass as they are.
	_, p.err = termsafe.Fprintf(p.w, format, a...)
}

func (p *printer) paint(code, s string) termsafe.Trusted {
	s = termsafe.Escape(s)
	if !p.color {
		return termsafe.Trusted(s)
	}
	return termsafe.Trusted("\x1b[" + code + "m" + s + "\x1b[0m")
}

func (p *printer) heading(s string) { p.f("\n%s\n", p.paint("1", s)) }

func (p *printer) sev(s model.Severity) termsafe.Trusted {
	label := strings.ToUpper(string(s))
	switch s {
	case model.Critical:
		return p.paint("1;31", label)
	case model.Warning:
		return p.paint("33", label)
	}
	return p.paint("36", label)
}

var hb = format.Bytes

// Text writes the terminal report.
func Text(w io.Writer, r *model.Report, opt Options) error {
	if opt.Top <= 0 {
		opt.Top = 10
	}
	p := &printer{w: w, color: opt.Color}
	h := r.Host
	glibc := ""
	if h.Info.Glibc != "" {
		glibc = ", glibc " + h.Info.Glibc
	}
	p.f("%s %s (kernel %s, %s%s) at %s\n", p.paint("1", "memdoctor check:"), orDash(h.Info.Hostname), orDash(h.Info.Kernel),
		orDash(h.Info.Arch), glibc, h.Info.Time.UTC().Format("2006-01-02 15:04:05 UTC"))
	if h.Info.Source != "" && h.Info.Source != "live" {
		p.f("source: %s\n", h.Info.Source)
	}
	coverage(p, r)
	findings(p, r)
	cgroupFocus(p, r.Cgroup)
	memory(p, h)
	zones(p, h)
	cgroups(p, h, opt.Top)
	containers(p, h, opt.Top)
	slab(p, h, opt.Top)
	processes(p, h, opt.Top, opt.Sort)
	users(p, h, opt.Top)
	runtimes(p, h)
	if len(r.Notes) > 0 {
		p.heading("NOTES (what could not be read)")
		for _, n := range r.Notes {
			line := "  - " + n.Source + ": " + n.Message
			if n.Hides != "" {
				line += "; hides " + n.Hides
			}
			if n.Fix != "" {
				line += "; fix: " + n.Fix
			}
			p.f("%s\n", line)
		}
	}
	if r.Cost != nil {
		p.f("\ncollected in %.0f ms (%s, %s vanished while reading)\n",
			r.Cost.DurationSeconds*1000, format.Count(float64(r.Cost.SmapsReads), "smaps_rollup read", "smaps_rollup reads"),
			format.Count(float64(r.Cost.Vanished), "process", "processes"))
	}
	return p.err
}

// coverage says up front how much was judged: how many rules ran, which
// could not and why, and whether the data is a partial view.
func coverage(p *printer, r *model.Report) {
	c := r.Coverage
	if c.Rules == 0 {
		return
	}
	if c.Partial {
		p.f("%s %d part(s) of the data could not be read, so findings may be missing:\n", p.paint("1;33", "PARTIAL VIEW:"), len(c.Unread))
		for _, u := range c.Unread {
			p.f("  - %s\n", u)
		}
	}
	p.f("rules: %d of %d evaluated", len(c.Evaluated), c.Rules)
	if len(c.NotEvaluated) == 0 {
		p.f("\n")
		return
	}
	p.f("; not evaluated:\n")
	var order []string
	by := map[string][]string{}
	fix := map[string]string{}
	for _, s := range c.NotEvaluated {
		if _, ok := by[s.Reason]; !ok {
			order = append(order, s.Reason)
		}
		by[s.Reason] = append(by[s.Reason], s.ID)
		if s.Reason == model.SkipNeedsRange {
			fix[s.Reason] = s.Fix
		}
	}
	for _, reason := range order {
		phrase := map[string]string{model.SkipNeedsRange: "need a time range", model.SkipMissingData: "lack their data",
			model.SkipTooLittle: "had too little data", model.SkipInvalidData: "had impossible data"}[reason]
		if phrase == "" {
			phrase = reason
		}
		line := fmt.Sprintf("  - %d %s: %s", len(by[reason]), phrase, strings.Join(by[reason], ", "))
		if f := fix[reason]; f != "" {
			line += " (" + f + ")"
		} else {
			line += " (why and how to get it: NOTES)"
		}
		p.f("%s\n", line)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func findings(p *printer, r *model.Report) {
	p.heading("FINDINGS")
	if len(r.Findings) == 0 {
		c := r.Coverage
		if c.Rules == 0 {
			c.Rules = len(diagnose.Rules())
			c.Evaluated = make([]string, c.Rules)
		}
		what := fmt.Sprintf("%d rules", c.Rules)
		if len(c.Evaluated) < c.Rules {
			what = fmt.Sprintf("the %d of %d rules evaluated (%d not evaluated, see above)", len(c.Evaluated), c.Rules, c.Rules-len(c.Evaluated))
		}
		if c.Partial {
			what += ", on a partial view"
		}
		label := p.paint("32", "ok:")
		if len(c.Evaluated) < c.Rules || c.Partial {
			label = p.paint("33", "no findings:")
		}
		p.f("  %s no problems found by %s\n", label, what)
		return
	}
	for _, f := range r.Findings {
		p.f("  [%s] %s (%s)\n      %s\n", p.sev(f.Severity), p.paint("1", f.ID), f.Subject, f.Summary)
		var ev []string
		for _, e := range f.Evidence {
			ev = append(ev, evidenceString(e))
		}
		p.f("      evidence: %s\n", strings.Join(ev, "; "))
		for i, rem := range f.Remedies {
			p.f("      remedy %d: %s\n", i+1, rem.Title)
			for _, c := range rem.Commands {
				p.f("          $ %s\n", c)
			}
			if len(rem.Code) > 0 {
				p.f("          in the program's code (%s, not a shell command):\n", orDash(rem.Language))
				for _, c := range rem.Code {
					p.f("          | %s\n", c)
				}
			}
			p.f("          risk: %s\n", rem.Risk)
			if rem.Undo != "" {
				p.f("          undo: %s\n", rem.Undo)
			}
		}
	}
}

func evidenceString(e model.Evidence) string {
	return e.Name + " " + e.Human()
}

func tab(p *printer) *tabwriter.Writer {
	return tabwriter.NewWriter(p.w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func memory(p *printer, h *model.Host) {
	a := h.Accounting
	p.heading("MEMORY")
	if a.Invalid != "" {
		p.f("  %s %s: the sizes below cannot be trusted\n", p.paint("1;33", "IMPOSSIBLE DATA:"), a.Invalid)
	}
	if a.UsedMissing != "" {
		total := hb(a.TotalBytes)
		if a.TotalBytes <= 0 {
			total = "unknown"
		}
		p.f("  total %s, used unknown: %s (free %s)\n", total, a.UsedMissing, hb(a.FreeBytes))
	} else {
		p.f("  total %s, available %s, used %.1f%% (free %s)\n", hb(a.TotalBytes), hb(a.AvailableBytes), a.UsedPercent, hb(a.FreeBytes))
	}
	if a.SwapTotalBytes > 0 {
		p.f("  swap %s, used %s\n", hb(a.SwapTotalBytes), hb(a.SwapTotalBytes-a.SwapFreeBytes))
	}
	p.f("  %s\n", termsafe.Trusted(wrap(a.Explain, 96, "  ")))
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tcategory\tbytes\t%% of total\t\n")
	cats := append([]model.Category(nil), a.Categories...)
	sort.SliceStable(cats, func(i, j int) bool { return cats[i].Bytes > cats[j].Bytes })
	for _, c := range cats {
		mark := ""
		if c.Reclaimable {
			mark = " (reclaimable)"
		}
		_, _ = termsafe.Fprintf(tw, "  \t%s%s\t%s\t%.1f%%\t\n", c.Name, mark, hb(c.Bytes), c.Percent)
		for _, part := range c.Parts {
			_, _ = termsafe.Fprintf(tw, "  \tof which %s\t%s\t%.1f%%\t\n", part.Name, hb(part.Bytes), part.Percent)
		}
	}
	if err := tw.Flush(); err != nil && p.err == nil {
		p.err = err
	}
	p.f("  unexplained: %s\n", termsafe.Trusted(wrap(strings.TrimPrefix(model.UnexplainedSource, "MemTotal minus every other row: "), 96, "  ")))
}

func zones(p *printer, h *model.Host) {
	if len(h.Zones) == 0 {
		return
	}
	w := h.Watermarks
	p.heading("ZONES (pages; the kswapd window is low−min = high−low)")
	if w.Recomputed {
		p.f("  min_free_kbytes %d, watermark_scale_factor %d (it changes nothing below %d: the window is min/4 until then)\n",
			w.MinFreeKbytes, w.WatermarkScaleFactor, w.EffectiveFrom)
	}
	ps := int64(h.Info.PageSize)
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tnode\tzone\tmanaged\tfree\tmin\tlow\thigh\tboost\twindow\trecomputed\t\n")
	for _, z := range h.Zones {
		chk := "-"
		if z.MatchesKernel != nil {
			chk = "match"
			if !*z.MatchesKernel {
				chk = "MISMATCH"
			}
		}
		_, _ = termsafe.Fprintf(tw, "  \t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", z.Node, z.Zone, z.ManagedPages, z.FreePages,
			z.MinPages, z.LowPages, z.HighPages, z.BoostPages, hb(z.LowMinGapBytes), chk)
	}
	_ = tw.Flush()
	for _, m := range w.Mismatches {
		p.f("  %s %s\n", p.paint("33", "mismatch:"), m)
	}
	// What-if for the largest lowmem zone of each node.
	var big *model.ZoneReport
	for i := range h.Zones {
		z := &h.Zones[i]
		if len(z.WhatIf) > 0 && (big == nil || z.ManagedPages > big.ManagedPages) {
			big = z
		}
	}
	if big == nil {
		return
	}
	p.f("\n  what if watermark_scale_factor were ... (zone %s; MemAvailable change for the host)\n", big.Zone)
	tw = tab(p)
	_, _ = termsafe.Fprintf(tw, "  \twsf\tmin\tlow\thigh\twindow\tMemAvailable\t\n")
	for _, wi := range big.WhatIf {
		_, _ = termsafe.Fprintf(tw, "  \t%d\t%d\t%d\t%d\t%s\t%s\t\n", wi.WatermarkScaleFactor, wi.MinPages, wi.LowPages, wi.HighPages,
			hb((wi.LowPages-wi.MinPages)*ps), signed(wi.MemAvailableDeltaBytes))
	}
	_ = tw.Flush()
	if r := w.Recommended; r != nil && r.WatermarkScaleFactor > w.WatermarkScaleFactor {
		p.f("  recommended if reclaim stalls appear: %d (window %s on %s, MemAvailable %s)\n",
			r.WatermarkScaleFactor, hb(r.LowMinGapBytes), r.Zone, signed(r.MemAvailableDeltaBytes))
	}
	rc := h.Reclaim
	p.f("  reclaim since boot: kswapd_low_wmark_hit_quickly %.0f, allocstall %.0f, pgscan_direct %.0f, compact_stall %.0f, oom_kill %.0f\n",
		rc.KswapdLowWmarkHitQuickly, rc.Allocstall, rc.PgscanDirect, rc.CompactStall, rc.OOMKill)
}

func signed(b int64) string {
	if b > 0 {
		return "+" + hb(b)
	}
	if b == 0 {
		return "0"
	}
	return hb(b)
}

func cgroups(p *printer, h *model.Host, top int) {
	c := h.Cgroups
	p.heading("CGROUPS")
	num := func(v *int64) string {
		if v == nil {
			return "?"
		}
		return fmt.Sprint(*v)
	}
	p.f("  layout %s, memory controller on %s: memory cgroups %s (live %s, dying %s)\n",
		c.Mode, c.MemoryHierarchy, num(c.MemoryTotal), num(c.MemoryLive), num(c.MemoryDying))
	if len(c.Top) == 0 {
		return
	}
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tcharged\tanon\tfile\tshmem\t cgroup\n")
	for i, u := range c.Top {
		if i == top {
			break
		}
		_, _ = termsafe.Fprintf(tw, "  \t%s\t%s\t%s\t%s\t %s\n", hb(u.UsageBytes), hb(u.AnonBytes), hb(u.FileBytes), hb(u.ShmemBytes), u.Cgroup)
	}
	_ = tw.Flush()
}

// containers lists the cgroups read in full that have a limit, OOM kills
// or an owner (unit, container, pod): what each may use, what it holds
// that reclaim cannot take cheaply (working set), its page cache, and its
// events.
func containers(p *printer, h *model.Host, top int) {
	var rows []model.CgroupUse
	for _, u := range h.Cgroups.Top {
		if model.IsContainer(u) {
			rows = append(rows, u)
		}
	}
	if len(rows) == 0 {
		return
	}
	p.heading("CONTAINERS (working set = usage - inactive file, as the kubelet computes it; to OOM = memory.max - anon - shmem - unreclaimable kernel)")
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tlimit\tworking set\tof limit\tto OOM\tcache\toom kills\tlimit hits\tpressure\t name\n")
	opt := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	for i, u := range rows {
		if i == top {
			break
		}
		limit, share := "none", "-"
		if u.LimitBytes != nil && *u.LimitBytes > 0 {
			limit = hb(*u.LimitBytes)
			share = fmt.Sprintf("%.0f%%", 100*float64(*u.WorkingSetBytes)/float64(*u.LimitBytes))
		}
		psi := "-"
		if u.PressureSomeAvg10 != nil {
			psi = fmt.Sprintf("%.1f%%", *u.PressureSomeAvg10)
		}
		name := u.Cgroup
		if u.Owner != nil && u.Owner.Name != "" && u.Owner.Name != u.Cgroup {
			name = u.Owner.Name + " (" + u.Cgroup + ")"
		}
		_, _ = termsafe.Fprintf(tw, "  \t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t %s\n", limit, hb(*u.WorkingSetBytes), share, toOOM(u.OOM), hb(u.FileBytes),
			opt(u.OOMKills), opt(u.LimitHits), psi, name)
	}
	_ = tw.Flush()
}

// toOOM is a container's distance to the OOM kill for the CONTAINERS
// table: the bytes reclaim cannot make room for, and the time at the
// unreclaimable part's growth when it rises; "-" without a limit.
func toOOM(m *model.OOMMemory) string {
	if m == nil || m.DistanceBytes == nil {
		return "-"
	}
	s := hb(max(*m.DistanceBytes, 0))
	if m.ETASeconds != nil {
		s += " ~" + format.Duration(time.Duration(*m.ETASeconds*float64(time.Second)))
	}
	return s
}

// oomLines says, for check --cgroup, what of its charge reclaim cannot
// take back, the distance to the OOM kill, and why the working set, RSS
// and usage differ.
func oomLines(p *printer, m *model.OOMMemory, why string) {
	if m == nil {
		return
	}
	line := fmt.Sprintf("  OOM-relevant: %s reclaim cannot take back (anon %s, shmem %s, kernel %s)", hb(m.UnreclaimableBytes),
		hb(m.AnonBytes), hb(m.ShmemBytes), hb(m.KernelBytes))
	if m.KernelEstimated {
		line += " (kernel estimated)"
	}
	line += fmt.Sprintf("; page cache active %s, inactive %s, dirty %s", hb(m.ActiveFileBytes), hb(m.InactiveFileBytes), hb(m.DirtyBytes))
	p.f("%s\n", line)
	if m.RuntimeSlackBytes > 0 || m.AllocatorSlackBytes > 0 {
		p.f("  of the unreclaimable %s, %s is heap its runtimes hold free and %s freed memory its allocators keep (%s): anon the kernel cannot reclaim but a collection or a trim gives back without a restart\n",
			hb(m.UnreclaimableBytes), hb(m.RuntimeSlackBytes), hb(m.AllocatorSlackBytes), slackProcs(m.SlackFrom))
	}
	switch {
	case m.DyingBytes != nil:
		n := "its dying descendants"
		if m.DyingDescendants != nil {
			n = fmt.Sprintf("its %d dying descendants", *m.DyingDescendants)
		}
		p.f("  dying: %s hold %s of its usage that its live children do not (page cache and kernel memory left charged when they were removed)\n", n, hb(*m.DyingBytes))
	case m.DyingNotMeasured != "":
		p.f("  dying: the charge held by dying descendants is not measured (%s)\n", m.DyingNotMeasured)
	}
	if m.DistanceBytes == nil {
		p.f("  to OOM: no limit set\n")
	} else {
		line = fmt.Sprintf("  to OOM: %s of its limit %s", hb(*m.DistanceBytes), hb(*m.LimitBytes))
		if m.SwapRoomBytes > 0 {
			line += fmt.Sprintf(" (with %s it may still swap out)", hb(m.SwapRoomBytes))
		}
		if m.ETASeconds != nil && m.GrowthBytesPerSecond != nil {
			line += fmt.Sprintf("; growing %s an hour, reached in about %s", hb(int64(*m.GrowthBytesPerSecond*3600)),
				format.Duration(time.Duration(*m.ETASeconds*float64(time.Second))))
		}
		p.f("%s\n", line)
	}
	if why != "" {
		p.f("  why: %s\n", why)
	}
}

// slackProcs says how many processes the slack came from.
func slackProcs(src []model.SlackSource) string {
	pids := map[int]bool{}
	for _, s := range src {
		pids[s.PID] = true
	}
	if len(pids) == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", len(pids))
}

// cgroupFocus shows the one cgroup check --cgroup focused on: who owns
// it, its limits, what is charged to it, its events and its pressure.
func cgroupFocus(p *printer, d *model.CgroupDetail) {
	if d == nil {
		return
	}
	name := d.Cgroup
	if d.Owner != nil && d.Owner.Name != "" && d.Owner.Name != d.Cgroup {
		name = d.Owner.Name + " (" + d.Cgroup + ")"
	}
	p.heading("CGROUP " + name)
	if o := d.Owner; o != nil {
		var parts []string
		for _, kv := range [][2]string{{"kind", o.Kind}, {"unit", o.Unit}, {"runtime", o.Runtime}, {"container", o.ContainerID}, {"pod", o.PodUID}, {"qos", o.QoS},
			{"namespace", o.Namespace}, {"pod name", o.Pod}, {"container name", o.Container}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+" "+kv[1])
			}
		}
		p.f("  owner: %s\n", strings.Join(parts, ", "))
	}
	ws := "-"
	if d.WorkingSetBytes != nil {
		ws = hb(*d.WorkingSetBytes)
	}
	line := fmt.Sprintf("  usage %s, working set %s", hb(d.UsageBytes), ws)
	if d.PeakBytes != nil {
		line += ", peak " + hb(*d.PeakBytes)
	}
	if d.SwapBytes != nil {
		line += ", swap " + hb(*d.SwapBytes)
	}
	p.f("%s\n", line)
	var lim []string
	for _, k := range []string{"max", "high", "low", "min", "swap_max"} {
		if v, ok := d.Limits[k]; ok {
			lim = append(lim, k+" "+hb(v))
		}
	}
	if len(lim) == 0 {
		lim = []string{"none set"}
	}
	p.f("  limits: %s\n", strings.Join(lim, ", "))
	var st []string
	for _, k := range []string{"anon", "file", "shmem", "active_file", "inactive_file", "kernel", "slab", "sock", "file_dirty"} {
		if v, ok := d.Stat[k]; ok {
			st = append(st, k+" "+hb(v))
		}
	}
	if len(st) > 0 {
		p.f("  charged: %s\n", strings.Join(st, ", "))
	}
	oomLines(p, d.OOM, d.Why)
	counts := func(m map[string]int64) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%s %d", k, m[k]))
		}
		return strings.Join(out, ", ")
	}
	if len(d.Events) > 0 {
		p.f("  events: %s\n", counts(d.Events))
	}
	if len(d.EventsLocal) > 0 {
		p.f("  events (its own): %s\n", counts(d.EventsLocal))
	}
	for _, kind := range []string{"some", "full"} {
		if ps, ok := d.Pressure[kind]; ok {
			p.f("  pressure %s: avg10 %.2f%%, avg60 %.2f%%, stalled %.1fs in all\n", kind, ps["avg10"], ps["avg60"], ps["total_seconds"])
		}
	}
	p.f("  findings about it: %d (listed above)\n", d.Findings)
}

func slab(p *printer, h *model.Host, top int) {
	s := h.Slab
	p.heading("SLAB")
	p.f("  reclaimable %s, unreclaimable %s (%.1f%% of memory, %.0f%% of slab)\n",
		hb(s.ReclaimableBytes), hb(s.UnreclaimableBytes), s.UnreclaimablePercent, s.UnreclaimableShare)
	if !s.CachesVisible {
		return
	}
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tbytes\tobjects\tsize\treclaimable\t cache\n")
	for i, c := range s.Top {
		if i == top {
			break
		}
		rec := "?"
		if c.Reclaimable != nil {
			rec = map[bool]string{true: "yes", false: "no"}[*c.Reclaimable]
		}
		_, _ = termsafe.Fprintf(tw, "  \t%s\t%d\t%d\t%s\t %s\n", hb(c.Bytes), c.Objects, c.ObjectSizeBytes, rec, c.Name)
	}
	_ = tw.Flush()
}

func processes(p *printer, h *model.Host, top int, by string) {
	if len(h.Processes) == 0 {
		return
	}
	if by == "" {
		by = "pss"
	}
	p.heading("PROCESSES (by " + strings.ToUpper(by) + "; USS is what exiting would free)")
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tpid\tpss\tuss\trss\tswap\tanon\tfile\tshmem\tthreads\tmalloc\t comm\n")
	opt := func(v *int64) string {
		if v == nil {
			return "?"
		}
		return hb(*v)
	}
	for i, pr := range h.Processes {
		if i == top {
			break
		}
		ar := "-"
		if pr.MallocArenas != nil {
			ar = fmt.Sprint(*pr.MallocArenas)
		}
		if pr.Allocator != "" {
			ar = pr.Allocator
			if pr.MallocArenas != nil {
				ar += fmt.Sprintf(" %d", *pr.MallocArenas)
			}
		}
		_, _ = termsafe.Fprintf(tw, "  \t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t %s\n", pr.PID, opt(pr.PSSBytes), opt(pr.USSBytes),
			hb(pr.RSSBytes), hb(pr.SwapBytes), hb(pr.AnonBytes), hb(pr.FileBytes), hb(pr.ShmemBytes), pr.Threads, ar, pr.Comm)
	}
	_ = tw.Flush()
}

func users(p *printer, h *model.Host, top int) {
	if len(h.Users) == 0 {
		return
	}
	p.heading("USERS (totals over each user's processes, by PSS)")
	tw := tab(p)
	_, _ = termsafe.Fprintf(tw, "  \tuser\tprocesses\tswap\tuss\tpss\trss\t\n")
	unread := int64(0)
	for i, u := range h.Users {
		if top > 0 && i == top {
			break
		}
		_, _ = termsafe.Fprintf(tw, "  \t%s\t%d\t%s\t%s\t%s\t%s\t\n", u.User, u.Processes, hb(u.SwapBytes), hb(u.USSBytes), hb(u.PSSBytes), hb(u.RSSBytes))
		unread += u.Unread
	}
	_ = tw.Flush()
	if unread > 0 {
		if unread == 1 {
			p.f("  1 process could not be read (smaps_rollup): its PSS and USS are missing from these sums\n")
		} else {
			p.f("  %d processes could not be read (smaps_rollup): their PSS and USS are missing from these sums\n", unread)
		}
	}
}

func wrap(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n" + indent)
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
