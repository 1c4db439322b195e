package record

import (
	"runtime/debug"
	"time"
)

// settle runs after each sample, each answer on /metrics and each
// evaluation of the findings when Config.Lean is set: the heap that work
// needed goes back to the kernel at once (a forced collection of a few MiB
// of heap, about a millisecond). The executable's pages are left mapped:
// unmapping them after each piece of work lowered the RSS but not what the
// memory cgroup is charged, since the pages stay in the page cache charged
// to it (bench/record.sh, both in the same run: 40.3 MiB charged either
// way, of which 30 MiB file pages; RSS 11.6 MiB unmapping, 31.6 without).
// The first settle, and the first after each evaluation of the findings,
// also drops from the page cache what start-up, or the diagnosis, read of
// the executable and the recorder does not run (trimExecutablePages);
// the others drop what is cached of it and no longer mapped.
// Safe from any goroutine; at most once a second: one asked for sooner
// runs when the second is up.
func (r *Recorder) settle() {
	if !r.cfg.Lean {
		return
	}
	r.settling.Lock()
	defer r.settling.Unlock()
	if wait := time.Second - time.Since(r.settled); wait > 0 {
		if !r.settleQueued {
			r.settleQueued = true
			time.AfterFunc(wait, func() {
				r.settling.Lock()
				r.settleQueued = false
				r.settling.Unlock()
				r.settle()
			})
		}
		return
	}
	debug.FreeOSMemory()
	if r.trimDue {
		r.trimDue = false
		if _, _, err := trimExecutablePages(); err != nil {
			r.logf("dropping the executable's pages from the page cache: %v", err)
		}
	} else {
		// What was read of the executable since and is no longer mapped
		// (a page fault maps the cached pages around it; reads of the file
		// bring in a read-ahead window) is dropped: a syscall, no reads.
		_ = dropExecutableCache()
	}
	r.settled = time.Now()
}

// trimStartup drops, before the first sample, what start-up read of the
// executable (trimExecutablePages): the whole binary, read ahead by
// start-up's first page faults, would otherwise stay charged while the
// first sample adds its heap on top, which made that moment the
// recorder's peak. The first settle trims again what the first sample
// mapped and later ones do not run (its discovery).
func (r *Recorder) trimStartup() {
	if !r.cfg.Lean {
		return
	}
	if _, _, err := trimExecutablePages(); err != nil {
		r.logf("dropping the executable's pages from the page cache: %v", err)
	}
}

// TrimStartup is trimStartup for a lean recorder's command, as soon as
// its flags are checked: before the store is opened and the listener
// started, whose heap would otherwise come on top of the whole binary
// start-up read (the recorder's peak). Errors are left to the recorder's
// own trim, which logs them.
func TrimStartup() { _, _, _ = trimExecutablePages() }

// settleAfterFindings settles after an evaluation of the findings, which
// runs in this process and maps code and tables sampling never uses: they
// are unmapped and dropped again (trimExecutablePages).
func (r *Recorder) settleAfterFindings() {
	r.settling.Lock()
	r.trimDue = true
	r.settling.Unlock()
	r.settle()
}
