package collect

// The allocator's own view of a process, without pausing it: processes
// running memdoctor's preload library (libmemdoctor_preload.so in their
// maps) with MEMDOCTOR_STATS=PATH append JSON lines with mallinfo2() to
// PATH; the newest line gives the in-use heap, the free heap and the
// arenas, and the newest trim line how long a trim takes.
//
// PATH is expanded as the library expands it (preload.StatsPathFromEnv: %p
// is the pid the process sees as its own, %% a percent sign), through
// /proc/PID/root (or /proc/PID/cwd when relative). A process mapping the
// library is counted (memdoctor_process_preload) and, when its stats
// cannot be read, noted with the reason.
//
// Privacy: of the process' environment only MEMDOCTOR_STATS (and LD_PRELOAD,
// to follow the dynamic linker's order) is looked for;
// nothing else of it is kept or shown.

import (
	"context"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// statsTail is how much of the end of a stats file is read.
const statsTail = 64 << 10

func hasPreload(maps []procfs.Mapping) bool {
	for _, m := range maps {
		if strings.HasSuffix(m.Path, preload.LibName) {
			return true
		}
	}
	return false
}

// tail reads at most n bytes from the end of a file.
func tail(c *ctx, name string, n int64) ([]byte, error) {
	f, err := c.fs.Sys().Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	if s, ok := f.(io.Seeker); ok {
		if st, err := f.Stat(); err == nil && st.Size() > n {
			if _, err := s.Seek(st.Size()-n, io.SeekStart); err != nil {
				return nil, err
			}
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// collectAllocator emits memdoctor_malloc_* for one process from its
// preload stats file, when it has one. A process that maps the library but
// whose stats cannot be read gets a note saying why: it already runs the
// library, so advice to run it would be wrong.
func collectAllocator(c *ctx, p *proc, maps []procfs.Mapping, labels []string) {
	pid, own := p.pid, p.own
	if !hasPreload(maps) {
		return
	}
	c.add("memdoctor_process_preload", 1, labels...)
	spid := strconv.Itoa(pid)
	who := "pid " + spid
	if len(labels) >= 4 && labels[2] == "comm" {
		who = labels[3] + " (pid " + spid + ")"
	}
	hides := "the allocator's view of " + who
	orMalloc := "read it once with `memdoctor malloc " + spid + "` or `memdoctor check --malloc` (either holds one thread briefly)"
	path, set, ok := preload.StatsPathFromEnv(c.environ(pid).Lookup, own)
	if !set {
		c.note("proc/"+spid+"/environ", who+" runs memdoctor's preload library without MEMDOCTOR_STATS (or it is unreadable): it writes no allocator stats",
			hides, "restart it with MEMDOCTOR_STATS=PATH added (%p in PATH is its pid), or "+orMalloc)
		return
	}
	if !ok {
		c.note("proc/"+spid+"/environ", who+" runs memdoctor's preload library with a MEMDOCTOR_STATS it refuses (a % other than %p and %%, or longer than PATH_MAX): it writes no allocator stats",
			hides, "restart it with a valid MEMDOCTOR_STATS, or "+orMalloc)
		return
	}
	name := "proc/" + spid + "/root" + path
	if !strings.HasPrefix(path, "/") {
		// relative to the directory it started in; its current one is the
		// best guess
		name = "proc/" + spid + "/cwd/" + path
	}
	var data []byte
	var err error
	if c.live && c.root {
		// On the live host, as root: the path is the process' to choose,
		// so it is read only if the process' user could read it, through
		// its root, never following a link in the file name nor opening
		// what is not a regular file of its own.
		var owners []uint32
		var cred *preload.Cred
		owners, cred, err = preload.CredOf(p.ids.uid, p.ids.gid, p.ids.groups)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			data, err = preload.ReadStats(ctx, preload.Target{PID: pid, StatsPath: path, Owners: owners, Cred: cred}, statsTail)
			cancel()
		}
	} else {
		data, err = tail(c, name, statsTail)
	}
	if err != nil {
		if _, serr := c.fs.ProcStatus(pid); serr != nil && isGone(serr) {
			return // it exited meanwhile
		}
		why := err.Error()
		if isGone(err) {
			why = path + " does not exist (the library could not create it: it says why on the process' stderr; or the file was removed)"
		}
		c.note(name, who+" runs memdoctor's preload library, but its stats are unreadable: "+why,
			hides, orMalloc)
		return
	}
	last, lastTrim := preload.Newest(data, own)
	if last == nil && c.live && c.opt.AskPreload > 0 && c.asked < 3*c.opt.AskPreload {
		start := time.Now()
		last = askSummary(c, pid, own, path, p.ids)
		c.asked += time.Since(start)
	}
	if last == nil {
		c.note(name, who+" runs memdoctor's preload library, but its stats hold no allocator summary yet",
			hides, "wait for a summary (every MEMDOCTOR_STATS_INTERVAL, 60s by default; none with 0), or "+orMalloc)
		return
	}
	m := last.Mallinfo2
	c.add("memdoctor_malloc_system_bytes", float64(m.Arena)+float64(m.Hblkhd), labels...)
	c.add("memdoctor_malloc_in_use_bytes", float64(m.Uordblks)+float64(m.Hblkhd), labels...)
	c.add("memdoctor_malloc_free_bytes", float64(m.Fordblks), labels...)
	if last.HasArenas {
		c.add("memdoctor_malloc_arenas", float64(last.Arenas), labels...)
	}
	if lastTrim != nil {
		c.add("memdoctor_malloc_trim_seconds", lastTrim.ElapsedMs/1000, labels...)
	}
}

// askSummary asks the library in a process whose stats hold no summary yet
// for one (an info request; the malloc_info dump it also writes is not
// read) and waits at most c.opt.AskPreload: the library looks for requests
// every second, so a process just started is not left without an
// allocator view until its first summary (60 s by default). As root the
// request is made as the process' user (preload.Ask); nil when it did not
// answer in time or the answer was refused.
func askSummary(c *ctx, pid, own int, path string, id ids) *preload.Line {
	t := preload.Target{PID: pid, OwnPID: own, StatsPath: path, SkipXML: true}
	if c.root {
		owners, cred, err := preload.CredOf(id.uid, id.gid, id.groups)
		if err != nil {
			return nil
		}
		t.Owners, t.Cred = owners, cred
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opt.AskPreload)
	defer cancel()
	res, err := preload.Ask(ctx, t, "info")
	if err != nil || res.Event.Mallinfo2 == nil {
		return nil
	}
	return &preload.Line{Event: res.Event, HasPID: true, HasArenas: res.Event.Arenas > 0}
}

// collectMallocServer names the allocator that serves a process' malloc
// (inject.FindMallocServer: the object its malloc binds to) in
// memdoctor_process_allocator_info and returns its name, "" when it could
// not be told.
func collectMallocServer(c *ctx, pid int, maps []procfs.Mapping, labels []string) string {
	if c.live && pid == os.Getpid() && !cgoBuild() {
		// memdoctor itself, a Go program without cgo: no object it maps
		// defines malloc, what reading its 20 MB executable concluded.
		return ""
	}
	if c.objects == nil {
		c.objects = inject.NewObjects()
	}
	ms, err := c.objects.FindMallocServer(context.Background(), pid, maps, c.environ(pid).Vars["LD_PRELOAD"])
	if err != nil {
		return ""
	}
	c.add("memdoctor_process_allocator_info", 1, append(labels[:len(labels):len(labels)], "allocator", ms.Name, "object", ms.Object)...)
	return ms.Name
}

// cgoBuild says whether this binary was built with cgo (then it maps a C
// library whose malloc it uses, named like any other process').
var cgoBuild = sync.OnceValue(func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return true // not known: read as any other process
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return true
})
