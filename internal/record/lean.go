package record

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// settle runs after each sample, each answer on /metrics and each
// evaluation of the findings when Config.Lean is set: the heap that work
// needed goes back to the kernel at once (a forced collection of a few MiB
// of heap, about a millisecond), and the executable's pages are unmapped,
// so that in between what stays resident is what waiting uses. The next
// piece of work maps again the few MiB of code it runs (page faults on
// pages in the page cache: no I/O). bench/record.sh measures it. Safe from
// any goroutine; at most once a second: one asked for sooner runs when
// the second is up.
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
	if n, err := releaseExecutablePages(); err != nil && !r.releaseFailed {
		r.releaseFailed = true // said once
		r.logf("releasing the executable's pages: %v (%d bytes released)", err, n)
	}
	r.settled = time.Now()
}

// releaseExecutablePages drops this process' mappings of the pages of its
// own executable that cannot have been written (read-only and executable
// segments: code, constants, tables), with madvise(MADV_DONTNEED). memdoctor
// is one binary for every command: starting it touches code of all of them
// (package initialisation, and the kernel maps up to 64 KiB around each
// page faulted in), about 18 MiB of resident but clean file pages for a
// recorder that then runs a small part of that code. The pages stay in the
// page cache, shared and reclaimable; those used again are mapped again on
// their next access. Writable mappings are never touched (their private
// copies would be lost), and in a position-independent executable only
// code is: its read-only data may hold relocations the loader wrote before
// making it read-only (RELRO), which the file does not have. Returns the
// bytes of address space released.
func releaseExecutablePages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	codeOnly := true
	if ef, err := elf.Open("/proc/self/exe"); err == nil {
		codeOnly = ef.Type != elf.ET_EXEC
		_ = ef.Close() // read-only
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var released int64
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != exe {
			continue
		}
		perms := f[1]
		if len(perms) < 4 || perms[1] == 'w' || perms[3] != 'p' || codeOnly && perms[2] != 'x' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if err := madviseDontNeed(uintptr(start), uintptr(end-start)); err != nil {
			return released, err
		}
		released += int64(end - start)
	}
	return released, sc.Err()
}
