package diagnose

// native_allocator_retention: jemalloc or tcmalloc keeps much more memory
// resident than the program has allocated.
//
// Mechanism: jemalloc keeps freed pages as "dirty" and gives them back to
// the kernel only as they age past dirty_decay_ms (10 s by default), and
// only when allocator activity or a background thread (off by default)
// runs the decay: an idle process after a burst of frees keeps them all.
// tcmalloc (gperftools) keeps free spans in its page heap and releases
// them at TCMALLOC_RELEASE_RATE (1 by default: slowly). Memory freed in
// small objects scattered over pages stays in pages still partly in use
// (fragmentation), which no setting gives back: Redis after deleting two
// thirds of its keys holds three times what it uses. glibc's view
// (allocator_hoarding) does not see any of it: glibc's arenas are empty.
//
// Evidence: the allocator's own figures, read in the process through its
// own interface by check --malloc (jemalloc's mallctl, tcmalloc's
// MallocExtension): resident (memdoctor_malloc_system_bytes), allocated
// (memdoctor_malloc_in_use_bytes), the free pages a purge or release gives
// back at once (memdoctor_malloc_retained_bytes), and the settings that
// decide whether it gives memory back by itself (memdoctor_malloc_setting).
//
// Fires: resident − allocated ≥ 128 MiB and ≥ 30 % of resident; critical at
// ≥ 4 GiB and ≥ 50 %. Lower than glibc's 256 MiB because the remedies here
// are settings the allocator already has, at no cost to the program's
// code; the share keeps a large healthy heap (a few % of slack, jemalloc's
// size classes round up by at most 20 %) quiet.
//
// Remedies are the allocator's own, and never one the process already has:
// a purge now (memdoctor trim) only when its free pages are worth it;
// jemalloc's background_thread only when it is off, a shorter decay only
// when it is longer than 1 s; tcmalloc's release rate only below 10.
//
// Known false positives: a burst just freed, which jemalloc with a
// background thread gives back within its decay time; a second reading
// tells.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type nativeAllocatorRetention struct{}

func init() { register(nativeAllocatorRetention{}) }

func (nativeAllocatorRetention) Meta() Meta {
	return Meta{ID: "native_allocator_retention", Title: "jemalloc or tcmalloc keeping freed memory resident",
		Needs:     []Need{{"memdoctor_process_rss_bytes", "memdoctor's process collector (--top N)"}},
		Reads:     []string{"memdoctor_malloc_in_use_bytes", "memdoctor_malloc_system_bytes", "memdoctor_malloc_retained_bytes", "memdoctor_malloc_setting", "memdoctor_process_allocator_info"},
		Charts:    []string{ChartAllocatorView, ChartProcessMemory},
		Prefilter: presentPrefilter("memdoctor_malloc_in_use_bytes"),
		Doc:       "jemalloc or tcmalloc holds far more resident than is allocated, with that allocator's own remedies"}
}

const (
	nativeRetainMin       = 128 << 20
	nativeRetainShare     = 0.30
	nativeRetainCrit      = 4 << 30
	nativeRetainCritShare = 0.50
	// nativePurgeWorth: free pages below this are not worth a purge.
	nativePurgeWorth = 64 << 20
	// jemalloc decay and tcmalloc release settings memdoctor advises.
	adviseDecayMs      = 1000
	adviseReleaseRate  = 10
	jemallocAllocator  = "jemalloc"
	tcmallocAllocator  = "tcmalloc"
	settingBackground  = "background_thread"
	settingDirtyDecay  = "dirty_decay_ms"
	settingMuzzyDecay  = "muzzy_decay_ms"
	settingReleaseRate = "release_rate"
)

func (nativeAllocatorRetention) Eval(in *Input) []model.Finding {
	h := in.Host
	if h == nil {
		return nil
	}
	var (
		out    []model.Finding
		unread []string
	)
	for _, p := range h.Processes {
		if p.Allocator != jemallocAllocator && p.Allocator != tcmallocAllocator {
			continue
		}
		m := p.Malloc
		if m == nil || m.SystemBytes <= 0 {
			unread = append(unread, fmt.Sprintf("%s (pid %d, %s)", p.Comm, p.PID, p.Allocator))
			continue
		}
		held := m.SystemBytes - m.InUseBytes
		share := float64(held) / float64(m.SystemBytes)
		if held < nativeRetainMin || share < nativeRetainShare {
			continue
		}
		sev := model.Warning
		if held >= nativeRetainCrit && share >= nativeRetainCritShare {
			sev = model.Critical
		}
		free := min(max(m.RetainedBytes, 0), held)
		frag := held - free
		pid := fmt.Sprint(p.PID)
		f := model.Finding{ID: "native_allocator_retention", Severity: sev, Subject: fmt.Sprintf("process %s (pid %d)", p.Comm, p.PID),
			Summary: fmt.Sprintf("%s's %s holds %s resident beyond what it has allocated (%.0f%% of its %s; %s allocated): %s in free pages it can give back now, %s in pages still partly in use",
				p.Comm, p.Allocator, format.Bytes(held), 100*share, format.Bytes(m.SystemBytes), format.Bytes(m.InUseBytes), format.Bytes(free), format.Bytes(frag)),
			Evidence: []model.Evidence{
				evText("allocator", p.Allocator),
				ev("held_bytes", float64(held), "bytes"),
				ev("resident_bytes", float64(m.SystemBytes), "bytes"),
				ev("allocated_bytes", float64(m.InUseBytes), "bytes"),
				ev("free_pages_bytes", float64(free), "bytes"),
				ev("held_share_percent", 100*share, "percent"),
				ev("rss_bytes", float64(p.RSSBytes), "bytes"),
			},
		}
		names := make([]string, 0, len(m.Settings))
		for k := range m.Settings {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			f.Evidence = append(f.Evidence, ev(k, m.Settings[k], "setting"))
		}
		if free >= nativePurgeWorth {
			call := "arena.<all>.purge"
			if p.Allocator == tcmallocAllocator {
				call = "MallocExtension_ReleaseFreeMemory"
			}
			f.Remedies = append(f.Remedies, model.Remedy{Title: fmt.Sprintf("give its %s of free pages back now (%s, called in the process)", format.Bytes(free), call),
				Commands: []string{"memdoctor trim " + pid + "            # dry run: the expected gain", "memdoctor trim " + pid + " --apply"},
				Risk:     "one thread of the process runs the purge (tens of milliseconds per 100 MiB given back) while the others run; the pages fault in again if the program allocates them anew"})
		}
		if r, ok := nativeSettingsRemedy(p.Allocator, m.Settings); ok {
			if free < nativePurgeWorth {
				r.Title += " (for memory freed from now on: it does not give back pages still partly in use)"
			}
			f.Remedies = append(f.Remedies, r)
		}
		if frag >= nativePurgeWorth {
			r := model.Remedy{Title: fmt.Sprintf("the other %s lies in pages still partly in use (fragmentation): no allocator setting gives it back, only the program moving its live objects, or a restart", format.Bytes(frag)),
				Risk: "a restart loses what the process keeps in memory"}
			if strings.HasPrefix(p.Comm, "redis") || strings.HasPrefix(p.Comm, "keydb") || strings.HasPrefix(p.Comm, "valkey") {
				r.Title = fmt.Sprintf("the other %s lies in pages still partly in use (fragmentation): Redis moves its live values with active defragmentation", format.Bytes(frag))
				r.Commands = []string{"redis-cli -p <port> CONFIG SET activedefrag yes"}
				r.Risk = "defragmentation costs CPU (active-defrag-cycle-min/max bound it) while it runs"
			}
			f.Remedies = append(f.Remedies, r)
		}
		out = append(out, f)
	}
	if len(unread) > 0 {
		const shown = 5
		more := ""
		if len(unread) > shown {
			more = fmt.Sprintf(" and %d more", len(unread)-shown)
			unread = unread[:shown]
		}
		in.Note(nativeAllocatorRetention{}.Meta().ID, "jemalloc or tcmalloc serves malloc in "+strings.Join(unread, ", ")+more+": how much freed memory it keeps resident was not read",
			fmt.Sprintf("memdoctor check --malloc %d   # reads each allocator's own figures, holding one thread of each for about a millisecond", min(len(unread), shown)))
	}
	return out
}

// nativeSettingsRemedy is the allocator's own settings to give memory back
// by itself, leaving out what the process already has; ok is false when it
// has them all.
func nativeSettingsRemedy(alloc string, s map[string]float64) (model.Remedy, bool) {
	has := func(k string) (float64, bool) { v, ok := s[k]; return v, ok }
	switch alloc {
	case jemallocAllocator:
		var parts []string
		if v, ok := has(settingBackground); !ok || v == 0 {
			parts = append(parts, "background_thread:true")
		}
		if v, ok := has(settingDirtyDecay); !ok || v < 0 || v > adviseDecayMs {
			parts = append(parts, fmt.Sprintf("dirty_decay_ms:%d", adviseDecayMs))
		}
		if v, ok := has(settingMuzzyDecay); !ok || v != 0 {
			parts = append(parts, "muzzy_decay_ms:0")
		}
		if len(parts) == 0 {
			return model.Remedy{}, false
		}
		return model.Remedy{Title: "have jemalloc give freed pages back by itself: " + strings.Join(parts, ", "),
			Commands: []string{"MALLOC_CONF=" + strings.Join(parts, ",") + " <command>"},
			Risk:     "pages given back sooner fault in again when reused (more page faults under bursts); background threads are one more thread per CPU at most; a restart is needed to read it (a jemalloc built with a prefix, linked into the program, reads <prefix>malloc_conf instead)",
			Undo:     "start it without the variable"}, true
	case tcmallocAllocator:
		if v, ok := has(settingReleaseRate); ok && v >= adviseReleaseRate {
			return model.Remedy{}, false
		}
		return model.Remedy{Title: fmt.Sprintf("have tcmalloc return free pages faster: release rate %d", adviseReleaseRate),
			Commands: []string{fmt.Sprintf("TCMALLOC_RELEASE_RATE=%d <command>", adviseReleaseRate)},
			Risk:     "pages returned sooner fault in again when reused; a restart is needed to read it (Google's tcmalloc: MallocExtension::SetBackgroundReleaseRate in the program)",
			Undo:     "start it without the variable"}, true
	}
	return model.Remedy{}, false
}
