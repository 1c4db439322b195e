package treat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/memdoctor/memdoctor/internal/malloc"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// mallocCandidate is a glibc process check may inspect.
type mallocCandidate struct {
	pid    int
	comm   string
	anon   float64
	labels sample.Labels
	alloc  string // jemalloc or tcmalloc when not glibc
}

// mallocCandidates lists the n glibc processes with the most anonymous
// memory whose allocator view is not known yet (no preload stats), memdoctor
// itself excluded.
func mallocCandidates(s *sample.Snapshot, n int) []mallocCandidate {
	var out []mallocCandidate
	for _, m := range s.Select("memdoctor_process_malloc_arenas") {
		pid, err := strconv.Atoi(m.Labels.Get("pid"))
		if err != nil || pid == os.Getpid() || pid == 1 {
			continue
		}
		if _, ok := s.Get("memdoctor_malloc_in_use_bytes", "pid", m.Labels.Get("pid")); ok {
			continue
		}
		anon, _ := s.Get("memdoctor_process_anon_bytes", "pid", m.Labels.Get("pid"))
		out = append(out, mallocCandidate{pid: pid, comm: m.Labels.Get("comm"), anon: anon, labels: m.Labels})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].anon > out[j].anon })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// InspectAllocators reads malloc_info from the n largest glibc processes
// that do not run memdoctor's preload library (by calling into each: one
// thread held for about a millisecond) and adds their allocator view to
// the snapshot, so that allocator_hoarding can judge them. Failures become
// notes.
func InspectAllocators(ctx context.Context, s *sample.Snapshot, n int, timeout time.Duration, progress io.Writer) []sample.Note {
	notes := nativeAllocators(s, n)
	for _, c := range append(mallocCandidates(s, n), nativeCandidates(s, n)...) {
		if sb := malloc.Sandboxed(c.pid); sb != "" {
			_, _ = termsafe.Fprintf(progress, "memdoctor: not reading malloc_info of pid %d (%s): it %s\n", c.pid, c.comm, sb)
		} else {
			_, _ = termsafe.Fprintf(progress, "memdoctor: reading %s of pid %d (%s): one of its threads is held briefly\n", c.what(), c.pid, c.comm)
		}
		// A process sandboxed since is refused by Inspect all the same.
		rep, err := malloc.Inspect(ctx, c.pid, malloc.Options{Timeout: timeout, Method: malloc.MethodPtrace, NoSandboxed: true,
			OnStuck: func(msg string) { _, _ = termsafe.Fprintf(progress, "memdoctor: %s\n", msg) }})
		if err != nil {
			msg := err.Error()
			fix := ""
			switch {
			case errors.Is(err, malloc.ErrCanary):
				fix = "read it without calling into the process: run it under the preload library (memdoctor preload)"
				notes = append(notes, sample.Note{Source: "malloc_info pid " + strconv.Itoa(c.pid),
					Message: "allocator state not read: " + msg, Hides: "whether the allocator of " + c.comm + " keeps freed memory resident", Fix: fix})
				return notes // nothing else is touched
			case errors.Is(err, malloc.ErrPtraceDenied):
				fix = "run memdoctor as root (CAP_SYS_PTRACE)"
			case errors.Is(err, malloc.ErrSeccomp):
				// A call into a sandboxed process may make a system call
				// its filter punishes; check chooses its processes itself
				// and does not even stop one of them.
				fix = "`memdoctor malloc " + strconv.Itoa(c.pid) + "` calls into it only once its seccomp filters are proven to allow every system call of the calls; or run it under the preload library (memdoctor preload)"
			}
			notes = append(notes, sample.Note{Source: "malloc_info pid " + strconv.Itoa(c.pid),
				Message: "allocator state not read: " + msg, Hides: "whether the allocator of " + c.comm + " keeps freed memory resident", Fix: fix})
			continue
		}
		l := c.labels
		t := rep.Totals
		s.AddMetric(sample.Metric{Name: "memdoctor_malloc_system_bytes", Labels: l, Value: float64(t.SystemBytes + t.MmapBytes)})
		s.AddMetric(sample.Metric{Name: "memdoctor_malloc_in_use_bytes", Labels: l, Value: float64(t.InUseBytes + t.MmapBytes)})
		s.AddMetric(sample.Metric{Name: "memdoctor_malloc_free_bytes", Labels: l, Value: float64(t.FreeBytes)})
		s.AddMetric(sample.Metric{Name: "memdoctor_malloc_retained_bytes", Labels: l, Value: float64(t.RetainedBytes)})
		s.AddMetric(sample.Metric{Name: "memdoctor_malloc_mmap_bytes", Labels: l, Value: float64(t.MmapBytes)})
		s.AddMetric(sample.Metric{Name: "memdoctor_malloc_arenas", Labels: l, Value: float64(t.ArenaCount)})
		if rep.Pause != nil {
			s.AddMetric(sample.Metric{Name: "memdoctor_malloc_pause_seconds", Labels: l, Value: rep.Pause.AttachedMs / 1000})
		}
		if ns := rep.Native; ns != nil {
			for _, st := range nativeSettings(ns) {
				s.AddMetric(sample.Metric{Name: "memdoctor_malloc_setting", Labels: sample.L("pid", l.Get("pid"), "comm", l.Get("comm"), "setting", st.name), Value: st.value})
			}
		}
	}
	return notes
}

// what says what is read of a candidate's allocator.
func (c mallocCandidate) what() string {
	if c.alloc != "" {
		return c.alloc + "'s own figures"
	}
	return "malloc_info"
}

type setting struct {
	name  string
	value float64
}

// nativeSettings are the settings of jemalloc or tcmalloc that decide
// whether it gives freed memory back by itself.
func nativeSettings(ns *malloc.NativeStats) []setting {
	var out []setting
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	if ns.BackgroundThreadOn != nil {
		out = append(out, setting{"background_thread", b(*ns.BackgroundThreadOn)})
	}
	if ns.DirtyDecayMs != nil {
		out = append(out, setting{"dirty_decay_ms", float64(*ns.DirtyDecayMs)})
	}
	if ns.MuzzyDecayMs != nil {
		out = append(out, setting{"muzzy_decay_ms", float64(*ns.MuzzyDecayMs)})
	}
	if ns.ReleaseRate != "" {
		if v, err := strconv.ParseFloat(ns.ReleaseRate, 64); err == nil {
			out = append(out, setting{"release_rate", v})
		}
	}
	return out
}

// nativeReadable are the allocators other than glibc's whose own figures
// memdoctor reads.
func nativeReadable(a string) bool { return a == "jemalloc" || a == "tcmalloc" }

// nativeCandidates lists the n processes with the most anonymous memory
// whose malloc jemalloc or tcmalloc serves.
func nativeCandidates(s *sample.Snapshot, n int) []mallocCandidate {
	var out []mallocCandidate
	for _, m := range s.Select("memdoctor_process_allocator_info") {
		a := m.Labels.Get("allocator")
		if !nativeReadable(a) {
			continue
		}
		pid, err := strconv.Atoi(m.Labels.Get("pid"))
		if err != nil || pid == os.Getpid() || pid == 1 {
			continue
		}
		anon, _ := s.Get("memdoctor_process_anon_bytes", "pid", m.Labels.Get("pid"))
		out = append(out, mallocCandidate{pid: pid, comm: m.Labels.Get("comm"), anon: anon,
			labels: sample.L("pid", m.Labels.Get("pid"), "comm", m.Labels.Get("comm")), alloc: a})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].anon > out[j].anon })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// nativeAllocators notes the n processes with the most anonymous memory
// whose malloc an allocator serves that memdoctor does not read (mimalloc,
// another one): they are not called into, and what they retain is not known,
// which the note says with that allocator's own way of giving memory back.
func nativeAllocators(s *sample.Snapshot, n int) []sample.Note {
	type native struct {
		c      mallocCandidate
		alloc  string
		object string
	}
	var all []native
	for _, m := range s.Select("memdoctor_process_allocator_info") {
		a := m.Labels.Get("allocator")
		if a == "glibc" || a == "" || nativeReadable(a) {
			continue // glibc's and these are read
		}
		pid, err := strconv.Atoi(m.Labels.Get("pid"))
		if err != nil {
			continue
		}
		anon, _ := s.Get("memdoctor_process_anon_bytes", "pid", m.Labels.Get("pid"))
		all = append(all, native{mallocCandidate{pid: pid, comm: m.Labels.Get("comm"), anon: anon}, a, m.Labels.Get("object")})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].c.anon > all[j].c.anon })
	var notes []sample.Note
	for i, p := range all {
		if i == n {
			break
		}
		fix := "its allocator's own settings, if it has any (memdoctor knows glibc's, jemalloc's, tcmalloc's and mimalloc's)"
		if a, ok := malloc.NativeAdvice[p.alloc]; ok {
			fix = "restart it with " + a
		}
		msg := fmt.Sprintf("%s (pid %d) allocates with %s (%s), not glibc's malloc: memdoctor reads glibc's, jemalloc's and tcmalloc's allocators only, and reading %s's own numbers is not supported yet, so it was not called into",
			p.c.comm, p.c.pid, p.alloc, path.Base(p.object), p.alloc)
		if p.alloc == "mimalloc" {
			msg = fmt.Sprintf("%s (pid %d) allocates with mimalloc (%s), which does not count what is allocated in its release builds, so check cannot judge what it retains; `memdoctor malloc %d` reads its committed memory and `memdoctor trim %d --apply` calls mi_collect(true) and measures what it gives back",
				p.c.comm, p.c.pid, path.Base(p.object), p.c.pid, p.c.pid)
		}
		notes = append(notes, sample.Note{Source: "malloc pid " + strconv.Itoa(p.c.pid),
			Message: msg,
			Hides:   "how much freed memory " + p.alloc + " keeps resident in " + p.c.comm, Fix: fix})
	}
	return notes
}
