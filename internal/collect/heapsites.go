package collect

// The heap profile of a process that runs memdoctor's preload library with
// MEMDOCTOR_PROFILE (preload/README.md "Heap profile"): the library dumps
// the call stacks of its sampled allocations; the few sites that hold the
// most become memdoctor_heap_site_in_use_bytes{pid,comm,site}, so a
// recording shows which sites grew and process_leak can name them.
//
// Live host only: the stacks are named from the files the process mapped
// (opened through /proc/PID/map_files or its root, checked against the
// mapping), which a capture does not hold. Read only where the process'
// user could read it, like its stats file. Privacy: of its environment only MEMDOCTOR_PROFILE and
// MEMDOCTOR_PROFILE_PATH are looked for.

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/memdoctor/memdoctor/internal/heapprof"
	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// heapSitesKept is how many sites of each process become series (the
// largest by bytes in use): enough to name a leak, few enough for the
// store.
const heapSitesKept = 5

// maxProfile bounds the dump read.
const maxProfile = 64 << 20

// collectHeapSites emits memdoctor_heap_site_in_use_bytes for a process
// that writes a heap profile; a profile that cannot be read is noted.
func collectHeapSites(c *ctx, pid int, labels []string) {
	if !c.live || !c.root {
		return // named from the process' own files, as root: live only
	}
	env := c.environ(pid)
	rate, pattern := env.Vars[preload.ProfileVar], env.Vars[preload.ProfilePathVar]
	if !preload.ProfileOn(rate) {
		return
	}
	if pattern == "" {
		pattern = preload.DefaultProfilePath
	}
	st, err := c.fs.ProcStatus(pid)
	if err != nil {
		return
	}
	spid := strconv.Itoa(pid)
	path, ok := preload.ExpandStatsPath(pattern, procfs.OwnPID(st, pid))
	if !ok {
		return // the library writes no profile for it either (it said so on stderr)
	}
	owners, cred, err := preload.CredOf(st.Text["Uid"], st.Text["Gid"], st.Text["Groups"])
	var data []byte
	if err == nil {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		data, err = preload.ReadStats(rctx, preload.Target{PID: pid, StatsPath: path, Owners: owners, Cred: cred}, maxProfile)
		cancel()
	}
	var d *heapprof.Dump
	if err == nil {
		d, err = heapprof.Parse(data)
	}
	if err != nil {
		if _, serr := c.fs.ProcStatus(pid); serr != nil && isGone(serr) {
			return
		}
		c.note(path, "pid "+spid+" samples its heap (MEMDOCTOR_PROFILE), but its profile is unreadable: "+err.Error(),
			"the allocation sites of pid "+spid, "wait for a dump (every MEMDOCTOR_PROFILE_INTERVAL, 10s by default), or run `memdoctor leaks "+spid+"`")
		return
	}
	sym := heapprof.NewSymbolizer(func(m procfs.Mapping) (*os.File, error) { return inject.OpenMapped(pid, m) })
	// Sites by function, without source lines: the label stays the same
	// across builds, and a collection does not read DWARF (a distribution's
	// libc debug file costs about 0.1 s to decompress, on every collection).
	sym.SetLines(false)
	r := heapprof.NewReport(sym, d, nil)
	for i, s := range r.Sites {
		if i == heapSitesKept {
			break
		}
		c.add("memdoctor_heap_site_in_use_bytes", float64(s.InUseBytes), append(labels[:len(labels):len(labels)], "site", s.Title(4))...)
	}
}
