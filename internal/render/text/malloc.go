package text

import (
	"fmt"
	"io"
	"path"
	"text/tabwriter"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/malloc"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// The allocator of a process: malloc, trim's dry run and trim --apply.

// MallocText prints a process' allocator state: each arena, the totals,
// what malloc_trim could give back, and the next command.
func MallocText(w io.Writer, r *malloc.Report) error {
	hb := format.Bytes
	dash := func(n int64) string {
		if n <= 0 {
			return "-"
		}
		return hb(n)
	}
	p := &firstErrWriter{w: w}
	if r.Native != nil {
		nativeText(p, r)
		return p.err
	}
	glibc := r.GlibcVersion
	if glibc == "" {
		glibc = "unknown"
	}
	p.f("pid %d (%s), glibc %s, read through %s\n\n", r.PID, r.Comm, glibc, r.Source)
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "arena\tsystem\tfree\tin use\tfree chunks\tlargest free\ttop\tretained\t\n")
	for _, a := range r.Arenas {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", a.Nr, hb(a.SystemBytes), hb(a.FreeBytes), hb(a.InUseBytes),
			a.FreeChunks, dash(a.LargestFreeChunkBytes), dash(a.TopBytes), hb(a.RetainedBytes))
	}
	t := r.Totals
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%d\t\t\t%s\t\n", hb(t.SystemBytes), hb(t.FreeBytes), hb(t.InUseBytes), t.FreeChunks, hb(t.RetainedBytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	p.f("\n%s; %s in %s outside them\n", format.Count(float64(t.ArenaCount), "arena", "arenas"), hb(t.MmapBytes), format.Count(float64(t.MmapChunks), "mmapped chunk", "mmapped chunks"))
	pct := 0.0
	if t.SystemBytes > 0 {
		pct = 100 * float64(t.RetainedBytes) / float64(t.SystemBytes)
	}
	p.f("retained: %s (%.0f%% of the arenas) is free memory in whole pages that malloc_trim(0) can give back to the kernel\n", hb(t.RetainedBytes), pct)
	p.f("  (pages an earlier trim already gave back still count: compare with RssAnon %s, VmRSS %s)\n", hb(r.Process.RssAnon), hb(r.Process.VMRSS))
	if m := r.Mallinfo2; m != nil {
		p.f("mallinfo2: arena %d, uordblks %d, fordblks %d, hblkhd %d, keepcost %d\n", m.Arena, m.Uordblks, m.Fordblks, m.Hblkhd, m.Keepcost)
	}
	if pp := r.Pause; pp != nil {
		p.f("hold: thread %d held %.1f ms (calls %.1f ms); %s in the process\n", pp.Thread, pp.AttachedMs, pp.CallsMs, format.Count(float64(pp.Threads), "thread", "threads"))
	}
	if r.PreloadMs > 0 {
		p.f("asked the preload library: answered in %.0f ms, no pause\n", r.PreloadMs)
	}
	for _, w := range r.Warnings {
		p.f("warning: %s\n", w)
	}
	for _, n := range r.Notes {
		p.f("note: %s\n", n)
	}
	if t.RetainedBytes >= 64<<20 {
		p.f("\nnext: memdoctor trim %d          # the expected gain and what --apply would run\n", r.PID)
	}
	return p.err
}

// firstErrWriter keeps the first write error.
type firstErrWriter struct {
	w   io.Writer
	err error
}

func (e *firstErrWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// f writes a line; process names and messages in a are escaped (a
// process chooses its own name).
func (e *firstErrWriter) f(format string, a ...any) {
	_, _ = termsafe.Fprintf(e, format, a...) // kept in e.err
}

// EstimateText prints trim's dry run: the expected gain (or its upper
// bound) and the steps --apply takes.
func EstimateText(w io.Writer, e *malloc.TrimEstimate) error {
	hb := format.Bytes
	p := &firstErrWriter{w: w}
	p.f("dry run, nothing changed: pid %d (%s)\n", e.PID, e.Comm)
	native := e.Allocator != "" && e.Allocator != "glibc"
	switch {
	case native && e.ExpectedGainBytes != nil:
		p.f("expected gain: %s (%s's free pages %s, RssAnon %s; read in the process, one thread held briefly)\n",
			hb(*e.ExpectedGainBytes), e.Allocator, hb(*e.RetainedBytes), hb(e.Process.RssAnon))
		if e.Nothing != "" {
			p.f("nothing to offer: %s\n", e.Nothing)
		}
	case native && e.UpperBoundBytes != nil && e.Source != "smaps":
		p.f("gain at most %s: %s's committed memory (RssAnon %s); it does not say how much of it is free, --apply measures what it gives\n",
			hb(*e.UpperBoundBytes), e.Allocator, hb(e.Process.RssAnon))
	case native:
		p.f("%s's free pages cannot be told from its used ones without a call into the process; run without --no-pause for the estimate\n", e.Allocator)
	case e.ExpectedGainBytes != nil:
		how := "called in the process, one thread held briefly"
		if e.Source == "preload" {
			how = "asked the preload library, no pause"
		}
		p.f("expected gain: %s (retained %s, RssAnon %s; malloc_info %s)\n",
			hb(*e.ExpectedGainBytes), hb(*e.RetainedBytes), hb(e.Process.RssAnon), how)
	case e.UpperBoundBytes != nil:
		p.f("gain at most %s: the resident memory of its malloc heaps (RssAnon %s)\n", hb(*e.UpperBoundBytes), hb(e.Process.RssAnon))
		p.f("  without pausing the process its free and used heap memory cannot be told apart; run without --no-pause for the estimate\n")
	}
	switch {
	case e.Apply == "preload":
		p.f("\n--apply asks the preload library:\n")
	case native:
		p.f("\n--apply calls %s inside the process:\n", e.Call)
	default:
		p.f("\n--apply calls malloc_trim(0) inside the process:\n")
	}
	for i, s := range e.Steps {
		p.f("  %d. %s\n", i+1, s)
	}
	for _, n := range e.Notes {
		p.f("note: %s\n", n)
	}
	if e.Nothing == "" {
		p.f("\nto trim: memdoctor trim %d --apply\n", e.PID)
	}
	return p.err
}

// TrimText prints what a trim gave back.
func TrimText(w io.Writer, r *malloc.TrimResult) error {
	hb := format.Bytes
	p := &firstErrWriter{w: w}
	how := "called in the process"
	if r.Pause != nil {
		how = fmt.Sprintf("called in the process, thread %d held %.1f ms", r.Pause.Thread, r.Pause.AttachedMs)
	}
	if r.Source == "preload" {
		how = "by its preload library, no pause"
	}
	call := ""
	if r.Allocator != "" && r.Allocator != "glibc" {
		call = " by " + r.Allocator + "'s " + r.Call
	}
	p.f("trimmed pid %d%s: RSS %s -> %s (%s given back) in %.1f ms, %s\n",
		r.PID, call, hb(r.RSS.Before), hb(r.RSS.After), hb(r.RSS.Diff), r.ElapsedMs, how)
	if r.PssAnon != nil {
		p.f("  RssAnon %s -> %s, Pss_Anon %s -> %s\n", hb(r.RssAnon.Before), hb(r.RssAnon.After), hb(r.PssAnon.Before), hb(r.PssAnon.After))
	}
	if r.Released != nil && *r.Released == 0 {
		p.f("  malloc_trim returned 0: there was nothing to give back\n")
	}
	for _, n := range r.Notes {
		p.f("note: %s\n", n)
	}
	return p.err
}

// nativeText prints the figures of jemalloc or tcmalloc, read through
// their own functions.
func nativeText(p *firstErrWriter, r *malloc.Report) {
	hb := format.Bytes
	n := r.Native
	name := n.Allocator
	if n.Version != "" {
		name += " " + n.Version
	}
	p.f("pid %d (%s), %s (%s serves its malloc), read through %s\n\n", r.PID, r.Comm, name, path.Base(n.Object), r.Source)
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', tabwriter.AlignRight)
	opt := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return hb(*v)
	}
	switch n.Allocator {
	case "jemalloc":
		fmt.Fprintf(tw, "allocated\tactive\tresident\tmapped\tdirty\tmuzzy\tretained (unmapped)\t\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", hb(n.AllocatedBytes), opt(n.ActiveBytes), hb(n.ResidentBytes),
			opt(n.MappedBytes), opt(n.DirtyBytes), opt(n.MuzzyBytes), opt(n.RetainedBytes))
	case "mimalloc":
		fmt.Fprintf(tw, "committed\tpeak committed\t\n")
		fmt.Fprintf(tw, "%s\t%s\t\n", opt(n.CommittedBytes), opt(n.PeakCommittedBytes))
	default:
		fmt.Fprintf(tw, "allocated\theap\tresident\tpage heap free\tunmapped\tcaches free\t\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", hb(n.AllocatedBytes), opt(n.HeapSizeBytes), hb(n.ResidentBytes),
			opt(n.PageheapFreeBytes), opt(n.PageheapUnmappedBytes), opt(n.CacheFreeBytes))
	}
	_ = tw.Flush()
	if n.Unknown != "" {
		p.f("\n%s\n", n.Unknown)
		p.f("  (compare with RssAnon %s, VmRSS %s)\n", hb(r.Process.RssAnon), hb(r.Process.VMRSS))
		if pp := r.Pause; pp != nil {
			p.f("hold: thread %d held %.1f ms (calls %.1f ms); %s in the process\n", pp.Thread, pp.AttachedMs, pp.CallsMs, format.Count(float64(pp.Threads), "thread", "threads"))
		}
		for _, n := range r.Notes {
			p.f("note: %s\n", n)
		}
		return
	}
	beyond := max(0, n.ResidentBytes-n.AllocatedBytes)
	pct := 0.0
	if n.ResidentBytes > 0 {
		pct = 100 * float64(beyond) / float64(n.ResidentBytes)
	}
	p.f("\nheld beyond what is allocated: %s (%.0f%% of resident)\n", hb(beyond), pct)
	treat := "arena.<all>.purge"
	if n.Allocator == "tcmalloc" {
		treat = "MallocExtension_ReleaseFreeMemory"
	}
	p.f("free pages: %s that %s gives back to the kernel; the rest lies in pages partly in use or in caches\n", hb(n.FreeResidentBytes), treat)
	p.f("  (compare with RssAnon %s, VmRSS %s)\n", hb(r.Process.RssAnon), hb(r.Process.VMRSS))
	switch n.Allocator {
	case "jemalloc":
		onoff := func(b *bool) string {
			switch {
			case b == nil:
				return "unknown"
			case *b:
				return "on"
			}
			return "off"
		}
		decay := func(v *int64) string {
			if v == nil {
				return "unknown"
			}
			return fmt.Sprint(*v)
		}
		p.f("settings: background_thread %s (opt.background_thread %s), dirty_decay_ms %s, muzzy_decay_ms %s, %s\n",
			onoff(n.BackgroundThreadOn), onoff(n.BackgroundThread), decay(n.DirtyDecayMs), decay(n.MuzzyDecayMs), format.Count(float64(n.Arenas), "arena", "arenas"))
	case "tcmalloc":
		rate := "unset (gperftools' default 1)"
		if n.ReleaseRate != "" {
			rate = n.ReleaseRate
		}
		p.f("settings: TCMALLOC_RELEASE_RATE %s\n", rate)
	}
	if pp := r.Pause; pp != nil {
		p.f("hold: thread %d held %.1f ms (calls %.1f ms); %s in the process\n", pp.Thread, pp.AttachedMs, pp.CallsMs, format.Count(float64(pp.Threads), "thread", "threads"))
	}
	for _, n := range r.Notes {
		p.f("note: %s\n", n)
	}
	if n.FreeResidentBytes >= 64<<20 {
		p.f("\nnext: memdoctor trim %d          # the expected gain and what --apply would run\n", r.PID)
	}
}
