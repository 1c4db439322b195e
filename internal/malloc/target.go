package malloc

// What memdoctor learns about a process from /proc before touching it, and
// the refusals that follow from it:
//
//	/proc/PID/status   State (T = stopped: refused), TracerPid (another
//	                   debugger: refused), Uid (another user: refused unless
//	                   root), Seccomp (strict mode: refused; filters: proven
//	                   first, see inject), VMRSS/RssAnon, Threads
//	/proc/PID/maps     libc.so.6 mapped (else not a glibc process), other
//	                   allocators (jemalloc, tcmalloc, mimalloc: when one
//	                   serves malloc, jemalloc and tcmalloc are read through
//	                   their own functions, others refused; server.go), the
//	                   preload library, the malloc heaps
//	/proc/PID/environ  MEMDOCTOR_STATS only, and only when the preload
//	                   library is mapped; nothing else is kept or printed
//	/proc/PID/exe      ELF class and machine: only x86-64 is called into
//	/proc/PID/task/TID/syscall  which thread is blocked outside the allocator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// Errors, to be classified with errors.Is. Every returned error wraps one
// of them and says what to do.
var (
	ErrPID1         = errors.New("refusing PID 1")
	ErrProcessGone  = inject.ErrProcessGone
	ErrNotGlibc     = errors.New("not a glibc process")
	ErrOtherUser    = errors.New("process of another user")
	ErrPtraceDenied = inject.ErrPtraceDenied
	ErrStopped      = inject.ErrStopped
	ErrTraced       = inject.ErrTraced
	ErrTimeout      = inject.ErrTimeout
	ErrCallFaulted  = inject.ErrCallFaulted
	ErrCanary       = inject.ErrCanary
	ErrUnsupported  = inject.ErrUnsupported
	ErrPreload      = errors.New("preload library did not answer")
	ErrSeccomp      = inject.ErrSeccomp
)

// target is what /proc says about a process.
type target struct {
	pid    int
	ownPID int // getpid() in the process' own pid namespace
	comm   string
	uid    [4]int64 // real, effective, saved, fs
	gid    [4]int64 // real, effective, saved, fs; -1 if unknown
	groups []uint32 // supplementary groups; nil if unknown
	state  byte
	tracer int
	// seccomp and filters are the main thread's Seccomp and
	// Seccomp_filters: 0 none, 1 strict mode, 2 filters.
	seccomp int
	filters int
	threads int64
	rss     int64
	rssAnon int64

	libcPath    string // as mapped in the process
	libcStart   uint64
	libcEnd     uint64
	libcDeleted bool
	glibc       string // version from the mapped libc's banner, "" if unknown
	musl        bool
	allocators  []string // other allocators mapped (jemalloc, tcmalloc, mimalloc)
	// server is the allocator that serves malloc when memdoctor reads it
	// through its own functions (jemalloc, tcmalloc); zero for glibc.
	server     inject.MallocServer
	preloadLib bool
	statsPath  string // MEMDOCTOR_STATS as seen by the process, expanded
	heaps      int    // 64 MiB-aligned malloc heaps in maps (upper bound of non-main arenas)

	elf64   bool
	machine uint16 // ELF e_machine: 62 x86-64, 183 aarch64

	maps []procfs.Mapping
}

func procPath(pid int, name string) string {
	return procfs.PIDPath(pid, name)
}

// inspectTarget reads a process' files and applies the refusals that do
// not depend on what is done to it.
func inspectTarget(pid int) (*target, error) {
	if pid == 1 {
		return nil, fmt.Errorf("%w: stopping init, even briefly, can stall the whole system (and its malloc state is rarely the problem)", ErrPID1)
	}
	if pid <= 0 {
		return nil, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
	}
	if pid == os.Getpid() {
		return nil, fmt.Errorf("%w: pid %d is memdoctor itself", ErrNotGlibc, pid)
	}
	fs := procfs.NewFS("/")
	st, err := fs.ProcStatus(pid)
	if err != nil {
		if procfs.IsNotExist(err) {
			return nil, fmt.Errorf("%w: pid %d (it exited, or it is in another PID namespace)", ErrProcessGone, pid)
		}
		return nil, fmt.Errorf("reading /proc/%d/status: %w", pid, err)
	}
	t := &target{pid: pid, comm: st.Text["Name"], ownPID: procfs.OwnPID(st, pid)}
	if s := st.Text["State"]; s != "" {
		t.state = s[0]
	}
	t.gid, t.groups = parseGids(st.Text["Gid"], st.Text["Groups"])
	t.tracer = int(st.Value("TracerPid"))
	t.seccomp = int(st.Value("Seccomp"))
	t.filters = int(st.Value("Seccomp_filters"))
	t.threads = st.Value("Threads")
	t.rss = st.Value("VmRSS")
	t.rssAnon = st.Value("RssAnon")
	uids := strings.Fields(st.Text["Uid"])
	if len(uids) != 4 {
		return nil, fmt.Errorf("/proc/%d/status: Uid %q", pid, st.Text["Uid"])
	}
	for i, u := range uids {
		if t.uid[i], err = strconv.ParseInt(u, 10, 64); err != nil {
			return nil, fmt.Errorf("/proc/%d/status: Uid %q", pid, st.Text["Uid"])
		}
	}
	switch t.state {
	case 'Z', 'X':
		return nil, fmt.Errorf("%w: pid %d is a zombie (exited, not yet reaped by its parent)", ErrProcessGone, pid)
	}
	if euid := int64(os.Geteuid()); euid != 0 {
		for _, u := range t.uid {
			if u != euid {
				return nil, fmt.Errorf("%w: pid %d runs as uid %d, memdoctor as uid %d: run memdoctor as that user or as root", ErrOtherUser, pid, t.uid[1], euid)
			}
		}
	}
	maps, err := fs.ProcMaps(pid)
	if err != nil {
		if procfs.IsNotExist(err) {
			return nil, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
		}
		if procfs.IsPermission(err) {
			return nil, fmt.Errorf("%w: cannot read /proc/%d/maps: %w", ErrPtraceDenied, pid, err)
		}
		return nil, err
	}
	if len(maps) == 0 {
		// No address space: a kernel thread, or a process that is exiting
		// (its memory is released before it becomes a zombie).
		if flags, ok := procFlags(pid); ok && flags&pfKthread != 0 {
			return nil, fmt.Errorf("%w: pid %d (%s) is a kernel thread: it has no user memory", ErrNotGlibc, pid, t.comm)
		}
		return nil, fmt.Errorf("%w: pid %d (%s) is exiting (its memory is already released)", ErrProcessGone, pid, t.comm)
	}
	t.maps = maps
	t.readMaps(maps)
	if t.libcPath == "" {
		// A process being killed unmaps its memory piece by piece: maps
		// read then may already lack libc.
		if exiting(pid) {
			return nil, fmt.Errorf("%w: pid %d (%s) is exiting (its memory is being released)", ErrProcessGone, pid, t.comm)
		}
		if t.musl {
			return nil, fmt.Errorf("%w: pid %d (%s) uses musl libc, which has no malloc_info or malloc_trim", ErrNotGlibc, pid, t.comm)
		}
		return nil, fmt.Errorf("%w: pid %d (%s) has no libc.so.6 in /proc/%d/maps: it is statically linked or uses another C library, so it has no glibc malloc_info to call", ErrNotGlibc, pid, t.comm, pid)
	}
	if err := t.checkMallocServer(); err != nil {
		return nil, err
	}
	t.readGlibc()
	t.readELF()
	if !t.elf64 && inject.Exited(pid, pid, 20*time.Millisecond) {
		return nil, fmt.Errorf("%w: pid %d (%s) exited", ErrProcessGone, pid, t.comm)
	}
	if t.preloadLib {
		t.readStatsVar()
	}
	return t, nil
}

// checkAttach applies the refusals for attaching with ptrace.
func (t *target) checkAttach() error {
	if t.state == 'T' || t.state == 't' {
		if t.tracer != 0 {
			return fmt.Errorf("%w: pid %d is traced by pid %d (a debugger or strace): detach it first", ErrTraced, t.pid, t.tracer)
		}
		return fmt.Errorf("%w: pid %d is stopped (state %c): whoever stopped it expects it to stay stopped; `kill -CONT %d` first", ErrStopped, t.pid, t.state, t.pid)
	}
	if t.tracer != 0 {
		return fmt.Errorf("%w: pid %d is traced by pid %d (a debugger or strace): detach it first", ErrTraced, t.pid, t.tracer)
	}
	if t.seccomp == 1 {
		return fmt.Errorf("%w: pid %d (%s) is in seccomp strict mode, where any system call but read, write, exit and sigreturn kills it: nothing was called, and memdoctor never calls into it; read it from inside instead: memdoctor's preload library, loaded before the process enters strict mode, answers without any call from outside (memdoctor preload)", ErrSeccomp, t.pid, t.comm)
	}
	return nil
}

// Sandboxed says how process pid runs under seccomp (strict mode or
// filters, in how many of its threads), "" when it does not or is gone.
func Sandboxed(pid int) string {
	seccomp := int64(0)
	if st, err := procfs.NewFS("/").ProcStatus(pid); err == nil {
		seccomp = st.Value("Seccomp")
	}
	return (&target{pid: pid, seccomp: int(seccomp)}).sandboxed()
}

// sandboxed says which threads of the process run under seccomp (strict
// mode or filters), "" when none does.
func (t *target) sandboxed() string {
	fs := procfs.Live()
	ents, err := fs.TIDs(t.pid)
	if err != nil {
		return ""
	}
	n, most := 0, 0
	for _, tid := range ents {
		st, err := fs.TaskStatus(t.pid, tid)
		if err != nil {
			continue
		}
		if st.Value("Seccomp") != 0 {
			n++
			most = max(most, int(st.Value("Seccomp_filters")))
		}
	}
	switch {
	case n == 0:
		return ""
	case t.seccomp == 1:
		return "is in seccomp strict mode"
	case most > 0:
		return fmt.Sprintf("runs %d of %s under seccomp (up to %s)", n, countOf(len(ents), "thread", "threads"), countOf(most, "filter", "filters"))
	}
	return fmt.Sprintf("runs %d of %s under seccomp", n, countOf(len(ents), "thread", "threads"))
}

func (t *target) readMaps(maps []procfs.Mapping) {
	seen := map[string]bool{}
	for i, m := range maps {
		if m.Path != "" {
			p := strings.TrimSuffix(m.Path, " (deleted)")
			b := path.Base(p)
			switch {
			case t.libcPath == "" && (b == "libc.so.6" || strings.HasPrefix(b, "libc-2.") && strings.HasSuffix(b, ".so")):
				t.libcPath, t.libcStart, t.libcEnd = p, m.Start, m.End
				t.libcDeleted = strings.HasSuffix(m.Path, " (deleted)")
			case strings.HasPrefix(b, "libc.musl") || strings.HasPrefix(b, "ld-musl"):
				t.musl = true
			case b == preload.LibName:
				t.preloadLib = true
			}
			for _, a := range []string{"libjemalloc", "libtcmalloc", "libmimalloc", "libhoard", "libsnmalloc"} {
				if strings.HasPrefix(b, a) && !seen[a] {
					seen[a] = true
					t.allocators = append(t.allocators, a[3:])
				}
			}
			continue
		}
		// A non-main arena heap: a 64 MiB-aligned anonymous reservation
		// (HEAP_MAX_SIZE), read-write part then PROT_NONE rest.
		const heapMax = 64 << 20
		if m.Start%heapMax != 0 || m.Perms != "rw-p" || m.End-m.Start > heapMax {
			continue
		}
		if m.End-m.Start == heapMax || i+1 < len(maps) && maps[i+1].Start == m.End && maps[i+1].Path == "" && maps[i+1].Perms == "---p" {
			t.heaps++
		}
	}
}

// readGlibc reads the version banner from the libc the process has mapped
// (through map_files, so a libc replaced on disk since the process started
// is still the one it runs), else through its root directory.
func (t *target) readGlibc() {
	names := []string{
		procPath(t.pid, fmt.Sprintf("map_files/%x-%x", t.libcStart, t.libcEnd)),
		procPath(t.pid, "root") + t.libcPath,
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		if v, _, ok := procfs.ParseGlibcBanner(data); ok {
			t.glibc = v
			return
		}
	}
}

// readELF reads the class and machine of the process' executable.
func (t *target) readELF() {
	f, err := os.Open(procPath(t.pid, "exe"))
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }() // read-only
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || !bytes.Equal(h[:4], []byte("\x7fELF")) || h[5] != 1 {
		return
	}
	t.elf64 = h[4] == 2
	t.machine = binary.LittleEndian.Uint16(h[18:])
}

// readStatsVar finds the stats file the preload library writes, from the
// process' initial environment.
func (t *target) readStatsVar() {
	env, err := procfs.Live().ProcEnviron(t.pid, preload.StatsVar)
	if err != nil {
		return
	}
	// expanded with the pid the process sees as its own
	if p, _, ok := preload.StatsPathFromEnv(env.Lookup, t.ownPID); ok {
		t.statsPath = p
	}
}

// readEnv finds the named variables in a process' initial environment (the
// first of each, as getenv finds it; procfs.ProcEnviron). Every other
// variable is skipped unread: environments hold secrets.
func readEnv(pid int, names ...string) map[string]string {
	env, err := procfs.Live().ProcEnviron(pid, names...)
	if err != nil {
		return map[string]string{}
	}
	return env.Vars
}

// glibcAtLeast reports whether the process' glibc is at least major.minor
// (false when unknown).
func (t *target) glibcAtLeast(major, minor int) bool {
	a, b, ok := strings.Cut(t.glibc, ".")
	if !ok {
		return false
	}
	ma, err1 := strconv.Atoi(a)
	b, _, _ = strings.Cut(b, ".")
	mi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// ELF machines.
const (
	emX8664   = 62
	emAArch64 = 183
)

// syscalls are the numbers that matter for choosing the calling thread.
type syscalls struct {
	futex  int
	malloc []int // mmap, munmap, mprotect, madvise, brk, mremap: malloc may hold an arena lock in them
}

func (t *target) syscalls() (syscalls, bool) {
	switch {
	case t.elf64 && t.machine == emX8664:
		return syscalls{futex: 202, malloc: []int{9, 11, 10, 28, 12, 25}}, true
	case t.elf64 && t.machine == emAArch64:
		return syscalls{futex: 98, malloc: []int{222, 215, 226, 233, 214, 216}}, true
	}
	return syscalls{}, false
}

// threadState is what /proc/PID/task/TID/syscall says about a thread.
type threadState struct {
	tid     int
	syscall int // -1: in user mode (not blocked in a syscall)
	running bool
	// sleeper: blocked in a sleep that a stop makes the thread resume
	// through restart_syscall (set for sandboxed processes only, whose
	// filters may forbid it: such a thread is chosen last).
	sleeper bool
}

// readThreads lists the threads and the syscall each is blocked in.
func readThreads(pid int) ([]threadState, error) {
	fs := procfs.Live()
	tids, err := fs.TIDs(pid)
	if err != nil {
		return nil, err
	}
	var out []threadState
	for _, tid := range tids {
		sc, err := fs.TaskSyscall(pid, tid)
		if err != nil {
			continue // exited, or no permission: not a candidate
		}
		out = append(out, threadState{tid: tid, syscall: sc.Nr, running: sc.Running})
	}
	return out, nil
}

// chooseThread picks the thread the calls are made on. A thread stopped
// inside malloc while it holds an arena lock would deadlock on that lock
// in malloc_info or malloc_trim, so prefer, in order: a thread blocked in
// a syscall malloc never makes (read, epoll_wait, nanosleep...), main
// thread first; a thread waiting on a futex (a condition variable, or a
// lock it does not hold yet); the main thread. why says which.
func chooseThread(pid int, ths []threadState, sc syscalls, known bool) (tid int, why string) {
	if !known {
		return pid, "main thread (unknown architecture: thread states not read)"
	}
	mallocCall := func(n int) bool {
		for _, m := range sc.malloc {
			if n == m {
				return true
			}
		}
		return false
	}
	rank := func(t threadState) int {
		switch {
		case t.sleeper:
			return 3
		case t.running || t.syscall < 0:
			return 3
		case t.syscall == sc.futex:
			return 2
		case mallocCall(t.syscall):
			return 4
		}
		return 1
	}
	best, bestRank := pid, 5
	for _, t := range ths {
		r := rank(t)
		if r < bestRank || r == bestRank && t.tid == pid {
			best, bestRank = t.tid, r
		}
	}
	switch bestRank {
	case 1:
		return best, "blocked in a system call outside the allocator"
	case 2:
		return best, "waiting on a futex"
	}
	return pid, "main thread; no thread was blocked outside the allocator, so the call may wait for a lock that thread holds (the timeout then interrupts a call that can be undone, and waits, bounded, for one that cannot: docs/runtimes/allocators.md)"
}

// taskStates returns the state letter of every thread.
func taskStates(pid int) (map[int]byte, error) {
	fs := procfs.Live()
	tids, err := fs.TIDs(pid)
	if err != nil {
		return nil, err
	}
	out := map[int]byte{}
	for _, tid := range tids {
		st, err := fs.TaskStat(pid, tid)
		if err != nil {
			continue
		}
		out[tid] = st.State
	}
	return out, nil
}

// stopPending reports whether SIGSTOP is pending for the process.
func stopPending(pid int) bool {
	st, err := procfs.NewFS("/").ProcStatus(pid)
	if err != nil {
		return false
	}
	for _, k := range []string{"ShdPnd", "SigPnd"} {
		if v, err := strconv.ParseUint(st.Text[k], 16, 64); err == nil && v&(1<<(uint(syscall.SIGSTOP)-1)) != 0 {
			return true
		}
	}
	return false
}

// tracerOf returns the TracerPid of one thread.
func tracerOf(pid, tid int) int {
	st, err := procfs.Live().TaskStatus(pid, tid)
	if err != nil {
		return 0
	}
	return int(st.Value("TracerPid"))
}

// processMemory reads the process' RSS figures (bytes).
type processMemory struct {
	VMRSS   int64  `json:"vmrss_bytes"`
	RssAnon int64  `json:"rss_anon_bytes"`
	PssAnon *int64 `json:"pss_anon_bytes,omitempty"`
}

func readMemory(pid int, withPss bool) (processMemory, error) {
	fs := procfs.NewFS("/")
	st, err := fs.ProcStatus(pid)
	if err != nil {
		if procfs.IsNotExist(err) {
			return processMemory{}, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
		}
		return processMemory{}, err
	}
	m := processMemory{VMRSS: st.Value("VmRSS"), RssAnon: st.Value("RssAnon")}
	if withPss {
		if r, err := fs.ProcSmapsRollup(pid); err == nil {
			if v, ok := r.Get("Pss_Anon"); ok {
				m.PssAnon = &v
			}
		}
	}
	return m, nil
}

// Task flags from include/linux/sched.h, as /proc/PID/stat shows them.
const pfKthread = 0x00200000

// pfExiting is set on a task from the start of its exit, before its memory
// is released (include/linux/sched.h).
const pfExiting = 0x00000004

// exiting reports whether pid has begun to exit or is gone.
func exiting(pid int) bool {
	flags, ok := procFlags(pid)
	return !ok || flags&pfExiting != 0
}

// procFlags reads the task flags (field 9) of /proc/PID/stat. ok is false
// when the file is gone or does not parse.
func procFlags(pid int) (flags uint64, ok bool) {
	st, err := procfs.Live().ProcStat(pid)
	if err != nil {
		return 0, false
	}
	return st.Flags, true
}

// countOf is "1 thread", "2 threads".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
