package collect

// Per-process memory: cheap /proc/PID/status for every process, the
// expensive smaps_rollup (it walks page tables under the target's mmap lock:
// 18 ms for a 600 MB process, seconds for 200 GB) only for the candidates
// that can still enter the top N by PSS. Because PSS ≤ RSS, walking
// candidates by falling RSS and stopping once the next RSS is below the N-th
// largest PSS found gives the exact top N with few reads.

import (
	"encoding/binary"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// The processes' collector reads only /proc/PID files and writes only its
// own ctx: it runs beside the others (Collect).
func init() { register(100, "processes", false, collectProcesses, concurrently) }

type proc struct {
	pid                          int
	own                          int // the pid it sees as its own (NSpid)
	ids                          ids // its credentials, from status
	comm                         string
	uid                          int
	rss, anon, file, shmem, swap int64
	threads                      int64
	pss, uss, swapPss            int64
	smaps                        bool
}

// ids are the Uid, Gid and Groups lines of a process' status, as read.
type ids struct{ uid, gid, groups string }

// sortKey returns the ranking of --sort: a process without smaps_rollup
// (unreadable) ranks by RSS for PSS and USS.
func sortKey(by string) func(p *proc) int64 {
	switch by {
	case "rss":
		return func(p *proc) int64 { return p.rss }
	case "swap":
		return func(p *proc) int64 { return p.swap }
	case "uss":
		return func(p *proc) int64 {
			if p.smaps {
				return p.uss
			}
			return p.rss
		}
	}
	return func(p *proc) int64 {
		if p.smaps {
			return p.pss
		}
		return p.rss
	}
}

// SortKeys are the values Options.SortBy takes.
var SortKeys = []string{"pss", "uss", "rss", "swap"}

// inCgroup says whether pid is in one of the cgroups or below.
func (c *ctx) inCgroup(pid int, cgs []string) bool {
	lines, err := cgroups.ReadProcCgroup(c.fs, pid)
	if err != nil {
		return false
	}
	for _, l := range lines {
		for _, cg := range cgs {
			if cg == "/" || l.Path == cg || strings.HasPrefix(l.Path, cg+"/") {
				return true
			}
		}
	}
	return false
}

// memoryCgroup is pid's cgroup in the memory hierarchy (v1's memory
// line, else the unified one), as the cgroups collector names cgroups.
func (c *ctx) memoryCgroup(pid int) (string, bool) {
	lines, err := cgroups.ReadProcCgroup(c.fs, pid)
	if err != nil {
		return "", false
	}
	unified := ""
	for _, l := range lines {
		if l.Has("memory") {
			return l.Path, true
		}
		if l.Unified() {
			unified = l.Path
		}
	}
	return unified, unified != ""
}

// userTotals adds per-user sums over procs: processes, RSS, and for those
// whose smaps_rollup was read PSS, USS and swap (as smem -u: its swap is the
// smaps Swap sum).
func userTotals(c *ctx, procs []*proc) {
	type tot struct{ n, unread, rss, pss, uss, swap int64 }
	by := map[int]*tot{}
	for _, p := range procs {
		if p.rss < 0 {
			continue // vanished
		}
		t := by[p.uid]
		if t == nil {
			t = &tot{}
			by[p.uid] = t
		}
		t.n++
		t.rss += p.rss
		t.swap += p.swap
		if p.smaps {
			t.pss += p.pss
			t.uss += p.uss
		} else {
			t.unread++
		}
	}
	names := userNames(c)
	for uid, t := range by {
		name := names[uid]
		if name == "" {
			name = strconv.Itoa(uid)
		}
		l := []string{"uid", strconv.Itoa(uid), "user", name}
		c.add("memdoctor_user_processes", float64(t.n), l...)
		c.add("memdoctor_user_processes_unread", float64(t.unread), l...)
		c.add("memdoctor_user_rss_bytes", float64(t.rss), l...)
		c.add("memdoctor_user_pss_bytes", float64(t.pss), l...)
		c.add("memdoctor_user_uss_bytes", float64(t.uss), l...)
		c.add("memdoctor_user_swap_bytes", float64(t.swap), l...)
	}
}

// userNames reads uid → name from the host's etc/passwd (empty when absent).
func userNames(c *ctx) map[int]string {
	out := map[int]string{}
	b, err := c.fs.ReadFile("etc/passwd")
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) < 3 {
			continue
		}
		if uid, err := strconv.Atoi(f[2]); err == nil {
			if _, dup := out[uid]; !dup {
				out[uid] = f[0]
			}
		}
	}
	return out
}

func collectProcesses(c *ctx) error {
	if c.opt.TopProcesses <= 0 && !c.opt.UserTotals {
		return nil
	}
	pids, err := c.fs.PIDs()
	if err != nil {
		return err
	}
	var procs []*proc
	vanished := 0
	focus := c.opt.Focus
	pidSet := map[int]bool{}
	for _, p := range focus.PIDs {
		pidSet[p] = true
	}
	cgroups := cgroups.FocusPaths(focus.Cgroup)
	for _, pid := range pids {
		if len(pidSet) > 0 && !pidSet[pid] {
			continue
		}
		st, err := c.fs.ProcStatusBrief(pid)
		if err != nil {
			if isGone(err) {
				vanished++
				continue
			}
			if isPerm(err) {
				continue
			}
			c.note("proc/"+strconv.Itoa(pid)+"/status", err.Error(), "", "")
			continue
		}
		if !st.HasRSS {
			continue // kernel thread: no user memory
		}
		p := &proc{pid: pid, rss: st.RSS, anon: st.Anon, file: st.File,
			shmem: st.Shmem, swap: st.Swap, threads: st.Threads,
			comm: st.Name, own: st.OwnPID(pid),
			ids: ids{st.UID, st.GID, st.Groups}}
		uid := st.UID // real, effective, saved, filesystem
		if i := strings.IndexAny(uid, " \t"); i >= 0 {
			uid = uid[:i]
		}
		p.uid, _ = strconv.Atoi(uid)
		if focus.UID != nil && p.uid != *focus.UID {
			continue
		}
		if len(cgroups) > 0 && !c.inCgroup(pid, cgroups) {
			continue
		}
		procs = append(procs, p)
	}
	key := sortKey(c.opt.SortBy)
	// bound is an upper bound of the key known before smaps_rollup:
	// USS ≤ PSS ≤ RSS, and the swap status line is the key itself.
	bound := func(p *proc) int64 {
		if c.opt.SortBy == "swap" {
			return p.swap
		}
		return p.rss
	}
	sort.Slice(procs, func(i, j int) bool { return bound(procs[i]) > bound(procs[j]) })

	n := c.opt.TopProcesses
	all := c.opt.UserTotals // totals need every process' PSS
	var topKey []int64      // descending, at most n
	reads, denied := 0, 0
	var smapsTime time.Duration
	for _, p := range procs {
		if !all && reads >= c.opt.MaxSmapsReads {
			break
		}
		if !all && len(topKey) >= n && bound(p) < topKey[n-1] {
			break // cannot enter the top n any more
		}
		start := time.Now()
		r, err := c.fs.ProcSmapsRollup(p.pid)
		smapsTime += time.Since(start)
		reads++
		if err != nil {
			switch {
			case isGone(err):
				vanished++
				p.rss = -1
			case isPerm(err):
				denied++
			default:
				c.note("proc/"+strconv.Itoa(p.pid)+"/smaps_rollup", err.Error(), "", "")
			}
			continue
		}
		p.smaps = true
		p.pss = r.Value("Pss")
		p.uss = r.Value("Private_Clean") + r.Value("Private_Dirty") + r.Value("Private_Hugetlb")
		p.swapPss = r.Value("SwapPss")
		if s, ok := r.Get("Swap"); ok {
			p.swap = s
		}
		topKey = append(topKey, key(p))
		sort.Slice(topKey, func(i, j int) bool { return topKey[i] > topKey[j] })
		if len(topKey) > n {
			topKey = topKey[:n]
		}
	}
	if denied > 0 {
		fix := "run as root"
		if c.live && c.root {
			fix = "the kernel refused root (ptrace access mode: another user namespace, or Yama/LSM policy)"
		}
		c.note("proc/PID/smaps_rollup", countOf(denied, "process", "processes")+" could not be read: permission denied (PSS/USS unknown; ranked by RSS)",
			"PSS and USS of those processes", fix)
	}
	if focus.Active() {
		c.add("memdoctor_processes_focused", float64(len(procs)))
	}
	if c.opt.UserTotals {
		userTotals(c, procs)
	}
	c.add("memdoctor_processes", float64(len(procs)))
	c.add("memdoctor_processes_vanished", float64(vanished))
	c.add("memdoctor_smaps_rollup_reads", float64(reads))
	c.add("memdoctor_smaps_rollup_seconds", smapsTime.Seconds())

	live := procs[:0:0]
	for _, p := range procs {
		if p.rss >= 0 {
			live = append(live, p)
		}
	}
	sort.SliceStable(live, func(i, j int) bool { return key(live[i]) > key(live[j]) })
	if len(live) > n {
		live = live[:n]
	}
	for _, p := range live {
		l := []string{"pid", strconv.Itoa(p.pid), "comm", p.comm}
		c.add("memdoctor_process_rss_bytes", float64(p.rss), l...)
		if p.smaps {
			c.add("memdoctor_process_pss_bytes", float64(p.pss), l...)
			c.add("memdoctor_process_uss_bytes", float64(p.uss), l...)
			c.add("memdoctor_process_swap_pss_bytes", float64(p.swapPss), l...)
		}
		c.add("memdoctor_process_swap_bytes", float64(p.swap), l...)
		c.add("memdoctor_process_anon_bytes", float64(p.anon), l...)
		c.add("memdoctor_process_file_bytes", float64(p.file), l...)
		c.add("memdoctor_process_shmem_bytes", float64(p.shmem), l...)
		c.add("memdoctor_process_threads", float64(p.threads), l...)
		c.add("memdoctor_process_uid", float64(p.uid), l...)
		if c.live {
			// Which memory cgroup holds it: what joins a process' runtime
			// and allocator to its container (rightsize).
			if cg, ok := c.memoryCgroup(p.pid); ok {
				c.add("memdoctor_process_cgroup_info", 1, append(l[:len(l):len(l)], "cgroup", cg)...)
			}
		}
		if c.opt.ArenaScan {
			maps, err := c.fs.ProcMaps(p.pid)
			if err != nil {
				continue
			}
			if c.maps == nil {
				c.maps = map[int][]procfs.Mapping{}
			}
			c.maps[p.pid] = maps
			c.add("memdoctor_process_mappings", float64(len(maps)), l...)
			alloc := ""
			if c.live && c.opt.Allocators {
				alloc = collectMallocServer(c, p.pid, maps, l)
			}
			if arenas, glibc := EstimateArenas(maps); glibc && (alloc == "" || alloc == inject.AllocGlibc) {
				if n, ok := countArenas(c.live, p.pid, maps); ok {
					arenas = n
				}
				c.add("memdoctor_process_malloc_arenas", float64(arenas), l...)
				if env := c.environ(p.pid); env.ArenaMaxSet {
					c.add("memdoctor_process_malloc_arena_max", float64(env.ArenaMax), l...)
				}
			}
			collectAllocator(c, p, maps, l)
			if hasPreload(maps) {
				collectHeapSites(c, p.pid, l)
			}
		}
	}
	return nil
}

// heapMax is glibc's HEAP_MAX_SIZE on 64-bit: 2 × DEFAULT_MMAP_THRESHOLD_MAX
// = 64 MiB. Every non-main arena lives in heaps reserved at this size and
// alignment.
const heapMax = 64 << 20

// goHeapStart is where the Go runtime places its first heap arena on 64-bit
// Linux (arena hint 0x00c0<<32). Go arenas are also 64 MiB-aligned
// reservations, so a Go process must not be read as a glibc one.
const goHeapStart = 0xc000000000

// EstimateArenas estimates the malloc arenas of a glibc process from its
// mappings: the main arena plus one per 64 MiB-aligned anonymous heap
// reservation (a read-write part followed by its PROT_NONE rest). An arena
// that outgrew one heap is counted once per heap, so the estimate is an upper
// bound. glibc reports whether libc.so.6 is mapped at all.
func EstimateArenas(maps []procfs.Mapping) (arenas int, glibc bool) {
	heaps := 0
	for _, m := range maps {
		if m.Start == goHeapStart {
			return 0, false // a Go heap, not glibc's
		}
	}
	for i, m := range maps {
		if !glibc && m.Path != "" {
			b := path.Base(m.Path)
			glibc = b == "libc.so.6" || (strings.HasPrefix(b, "libc-2.") && strings.HasSuffix(b, ".so"))
		}
		if m.Path != "" || m.Start%heapMax != 0 || m.Perms != "rw-p" || m.End-m.Start > heapMax {
			continue
		}
		if m.End-m.Start == heapMax {
			heaps++
			continue
		}
		if i+1 < len(maps) {
			n := maps[i+1]
			if n.Start == m.End && n.Path == "" && n.Perms == "---p" && n.End <= m.Start+heapMax {
				heaps++
			}
		}
	}
	return 1 + heaps, glibc
}

// maxHeapReads bounds the heap headers countArenas reads in one process
// (one per 64 MiB of anonymous read-write memory): 4096 cover 256 GiB.
const maxHeapReads = 4096

// countArenas counts the malloc arenas of a live 64-bit glibc process from
// the headers of its heaps, read through /proc/PID/mem without stopping it.
// Every heap starts at a 64 MiB boundary with glibc's heap_info: the arena
// it belongs to, the previous heap of that arena (NULL for an arena's first
// heap, whose arena record follows the header), its size and its
// read-write size. An arena that grew past 64 MiB has more than one heap,
// and neighbouring heaps share one mapping, so the maps alone overcount
// (EstimateArenas); counting first heaps is the count malloc_info gives.
// ok is false when the memory cannot be read (not live, or not allowed) or
// a page where a heap could start is swapped out.
func countArenas(live bool, pid int, maps []procfs.Mapping) (arenas int, ok bool) {
	if !live {
		return 0, false
	}
	f, err := procfs.OpenMem(pid, os.O_RDONLY)
	if err != nil {
		return 0, false
	}
	defer func() { _ = f.Close() }()
	// A page is read only when pagemap says it is in memory: a page swapped
	// out would be read back in, and one a userfaultfd handler serves could
	// block the read until the handler answers.
	pm, err := procfs.OpenPagemap(pid)
	if err != nil {
		return 0, false
	}
	defer func() { _ = pm.Close() }()
	page := uint64(os.Getpagesize())
	var e [8]byte
	arenas, reads := 1, 0 // the main arena has no heap
	var h [32]byte
	for _, m := range maps {
		if m.Path != "" || m.Perms != "rw-p" || m.End <= 1<<32 {
			continue
		}
		for a := (m.Start + heapMax - 1) &^ (heapMax - 1); a < m.End; a += heapMax {
			if reads++; reads > maxHeapReads {
				return 0, false
			}
			if _, err := pm.ReadAt(e[:], int64(a/page*8)); err != nil {
				return 0, false
			}
			switch pe := binary.LittleEndian.Uint64(e[:]); {
			case pe&(1<<62) != 0:
				return 0, false // swapped out: maybe a heap's header; the estimate stands
			case pe&(1<<63) == 0:
				continue // never touched: glibc writes a heap's header, so no heap starts here
			}
			if _, err := f.ReadAt(h[:], int64(a)); err != nil {
				return 0, false
			}
			arena := binary.LittleEndian.Uint64(h[0:])
			prev := binary.LittleEndian.Uint64(h[8:])
			size := binary.LittleEndian.Uint64(h[16:])
			rw := binary.LittleEndian.Uint64(h[24:])
			if prev == 0 && arena > a && arena < a+256 && size > 0 && size <= heapMax && rw >= size && rw <= heapMax {
				arenas++
			}
		}
	}
	return arenas, true
}

// countOf is "1 process", "2 processes".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
