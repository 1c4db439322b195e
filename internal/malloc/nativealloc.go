package malloc

// Reading and treating an allocator other than glibc's that serves the
// process' malloc (server.go names it), through the same session as
// glibc's (native.go: canary, one thread chosen outside the allocator,
// errno saved, the deadline, registers restored, never left stopped).
// Only the functions differ, resolved from the object that defines the
// malloc the process binds to (inject.ResolveObject: its dynamic symbols,
// read within elfsym's bounds); mmap, munmap and __errno_location come
// from its libc.so.6. Every call writes into one page of scratch memory
// mapped in the process for the purpose and unmapped before the thread
// is let go:
//
//	scratch = mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)
//	          +0   the size in and out (size_t) or tcmalloc's value
//	          +8   the value read (up to 64 bytes)
//	          +72  the value written (epoch)
//	          +128 the name, NUL-terminated
//
// jemalloc (5.x; libjemalloc exports mallctl, a statically linked copy
// may export je_mallctl):
//
//	mallctl("epoch", NULL, NULL, &1, 8)    refreshes the statistics
//	mallctl("stats.allocated"|"stats.active"|"stats.resident"|"stats.mapped"|
//	        "stats.retained", &v, &8, NULL, 0)
//	mallctl("stats.arenas.4096.pdirty"|".pmuzzy", ...)  pages, all arenas
//	mallctl("arenas.page"|"arenas.narenas"|"version", ...)
//	mallctl("opt.background_thread"|"background_thread", ...)  bool
//	mallctl("arenas.dirty_decay_ms"|"arenas.muzzy_decay_ms", ...)  ssize_t
//	trim: mallctl("arena.4096.purge", NULL, NULL, NULL, 0)
//
// Which calls may be interrupted at the deadline: jemalloc's "epoch"
// holds ctl_mtx while it takes each arena's statistics mutexes in turn
// (and the first mallctl of a process initialises its control tree under
// ctl_mtx), "background_thread" takes ctl_mtx then background_thread_lock,
// and "arena.4096.purge" holds an arena's decay mutex while it takes its
// extent mutexes: interrupted while waiting for the second lock they would
// leave the first one locked for good, so they are made with CallNested
// (waited for, undone only CallGrace past the deadline, saying a lock may
// stay held). The other reads take ctl_mtx alone (stats.*)
// or no lock (opt.*, arenas.page): one waiting on ctl_mtx holds nothing
// and is undone at the deadline like glibc's calls.
//
// tcmalloc (gperftools): MallocExtension_GetNumericProperty(name, &v)
// for "generic.current_allocated_bytes", "generic.heap_size",
// "tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes" and
// the caches' free bytes; each takes one spin lock at a time (the page
// heap's, or one size class's) and waits in futex holding nothing, so it
// may be undone. The treatment, MallocExtension_ReleaseFreeMemory(),
// holds the page heap lock while it madvises the free spans: busy, waited
// for; waiting for that lock it holds nothing.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/inject"
)

// NativeStats is the view of the allocator that serves malloc when it is
// not glibc's, read through its own interface.
type NativeStats struct {
	// Allocator is jemalloc or tcmalloc; Object the file that serves
	// malloc, as the process maps it; Version the allocator's own
	// (jemalloc's "version").
	Allocator string `json:"allocator"`
	Object    string `json:"object"`
	Version   string `json:"version,omitempty"`
	// AllocatedBytes is what the program has allocated and not freed
	// (jemalloc stats.allocated, tcmalloc generic.current_allocated_bytes).
	AllocatedBytes int64 `json:"allocated_bytes"`
	// ResidentBytes is the allocator's resident memory as it counts it
	// (jemalloc stats.resident: data pages and metadata; tcmalloc
	// generic.heap_size minus the unmapped bytes).
	ResidentBytes int64 `json:"resident_bytes"`
	// FreeResidentBytes is free memory the treatment gives back to the
	// kernel: jemalloc's dirty and muzzy pages, tcmalloc's page heap free
	// bytes.
	FreeResidentBytes int64 `json:"free_resident_bytes"`

	// jemalloc: stats.active, stats.mapped, stats.retained (virtual
	// memory kept unmapped from the kernel's point of view: not resident),
	// the dirty and muzzy pages of all arenas in bytes, arenas.page,
	// arenas.narenas.
	ActiveBytes   *int64 `json:"active_bytes,omitempty"`
	MappedBytes   *int64 `json:"mapped_bytes,omitempty"`
	RetainedBytes *int64 `json:"retained_bytes,omitempty"`
	DirtyBytes    *int64 `json:"dirty_bytes,omitempty"`
	MuzzyBytes    *int64 `json:"muzzy_bytes,omitempty"`
	PageSize      int64  `json:"page_size,omitempty"`
	Arenas        int64  `json:"arenas,omitempty"`
	// BackgroundThread is opt.background_thread (asked at start) and
	// BackgroundThreadOn whether background threads run now (Redis turns
	// them on at run time); DirtyDecayMs and MuzzyDecayMs are the arenas'
	// decay times (-1: never).
	BackgroundThread   *bool  `json:"opt_background_thread,omitempty"`
	BackgroundThreadOn *bool  `json:"background_thread,omitempty"`
	DirtyDecayMs       *int64 `json:"dirty_decay_ms,omitempty"`
	MuzzyDecayMs       *int64 `json:"muzzy_decay_ms,omitempty"`

	// tcmalloc: generic.heap_size, the page heap's free (mapped) and
	// unmapped bytes, and the free bytes of the central, transfer and
	// thread caches (not given back by a release).
	HeapSizeBytes         *int64 `json:"heap_size_bytes,omitempty"`
	PageheapFreeBytes     *int64 `json:"pageheap_free_bytes,omitempty"`
	PageheapUnmappedBytes *int64 `json:"pageheap_unmapped_bytes,omitempty"`
	CacheFreeBytes        *int64 `json:"cache_free_bytes,omitempty"`
	// mimalloc: its committed memory now and at its peak
	// (mi_process_info); mimalloc does not count what is allocated in a
	// release build, so AllocatedBytes and FreeResidentBytes stay 0 and
	// Unknown says so.
	CommittedBytes     *int64 `json:"committed_bytes,omitempty"`
	PeakCommittedBytes *int64 `json:"peak_committed_bytes,omitempty"`
	// Unknown says what the allocator does not tell.
	Unknown string `json:"unknown,omitempty"`
	// ReleaseRate is TCMALLOC_RELEASE_RATE from the process' environment
	// ("" when unset: gperftools' default, 1).
	ReleaseRate string `json:"release_rate,omitempty"`
}

// nativeReadable reports whether memdoctor reads and treats this
// allocator through its own functions.
func nativeReadable(name string) bool {
	return name == inject.AllocJemalloc || name == inject.AllocTcmalloc || name == inject.AllocMimalloc
}

// jemalloc's MALLCTL_ARENAS_ALL: the index naming all arenas at once.
const jeArenasAll = "4096"

// nativeFuncs are the allocator's functions resolved for a session, by
// the name the session calls them (jemalloc's mallctl may be exported as
// je_mallctl).
func (t *target) nativeFuncs() (map[string]uint64, error) {
	var want [][]string // each: the session's name, then the names to try
	switch t.server.Name {
	case inject.AllocJemalloc:
		want = [][]string{{"mallctl", "mallctl", "je_mallctl"}}
	case inject.AllocTcmalloc:
		want = [][]string{
			{"MallocExtension_GetNumericProperty", "MallocExtension_GetNumericProperty"},
			{"MallocExtension_ReleaseFreeMemory", "MallocExtension_ReleaseFreeMemory"},
		}
	case inject.AllocMimalloc:
		want = [][]string{{"mi_process_info", "mi_process_info"}, {"mi_collect", "mi_collect"}}
	default:
		return nil, fmt.Errorf("%w: memdoctor does not call into %s", ErrNotGlibc, t.server.Name)
	}
	var names []string
	for _, w := range want {
		names = append(names, w[1:]...)
	}
	got, err := inject.ResolveObject(t.pid, t.maps, t.server.Object, names...)
	if err != nil {
		return nil, fmt.Errorf("pid %d (%s): %s: %w", t.pid, t.comm, t.server.Name, err)
	}
	out := map[string]uint64{}
	for _, w := range want {
		for _, n := range w[1:] {
			if a, ok := got[n]; ok {
				out[w[0]] = a
				break
			}
		}
		if _, ok := out[w[0]]; !ok {
			how := ""
			if t.server.Static {
				how = " (linked into the executable, which does not export it: only an allocator library, or an executable linked with -rdynamic, can be called by name)"
			}
			return nil, fmt.Errorf("%w: %s is not exported by %s in pid %d (%s)%s", inject.ErrNoSymbol, w[0], path.Base(t.server.Object), t.pid, t.comm, how)
		}
	}
	return out, nil
}

// scratch is one page mapped in the process for the calls' arguments.
type scratch struct {
	s    *session
	addr uint64
}

const (
	scratchSize = 4096
	scrLen      = 0
	scrOut      = 8
	scrIn       = 72
	scrName     = 128
	maxNameLen  = 256
)

// withScratch maps the scratch page, runs fn, and unmaps it.
func (s *session) withScratch(ctx context.Context, fn func(*scratch) error) (err error) {
	const (
		protRW   = 0x1 | 0x2
		mapFlags = 0x02 | 0x20 // MAP_PRIVATE | MAP_ANONYMOUS
	)
	buf, err := s.call(ctx, "mmap", 0, scratchSize, protRW, mapFlags, ^uint64(0), 0)
	if err != nil {
		return err
	}
	if buf == 0 || int64(buf) < 0 && int64(buf) > -4096 {
		return errCall(s.t.pid, "mmap of %d bytes failed (out of address space or memory)", scratchSize)
	}
	defer func() {
		s.in.WindDown()
		if _, uerr := s.call(ctx, "munmap", buf, scratchSize); uerr != nil && err == nil {
			err = uerr
		}
	}()
	return fn(&scratch{s: s, addr: buf})
}

// mallctlRead reads a jemalloc control of size bytes (at most 64).
func (sc *scratch) mallctlRead(ctx context.Context, name string, size int, nested bool) ([]byte, error) {
	if len(name) >= maxNameLen || size > scrIn-scrOut {
		return nil, fmt.Errorf("mallctl %q: name or value too long", name)
	}
	var head [scrName]byte
	binary.LittleEndian.PutUint64(head[scrLen:], uint64(size))
	if err := sc.s.in.Write(sc.addr, append(head[:], append([]byte(name), 0)...)); err != nil {
		return nil, err
	}
	rc, err := sc.s.callAs(ctx, "mallctl", "mallctl(\""+name+"\")", nested, sc.addr+scrName, sc.addr+scrOut, sc.addr+scrLen, 0, 0)
	if err != nil {
		return nil, err
	}
	if e := int32(uint32(rc)); e != 0 {
		return nil, errCall(sc.s.t.pid, "mallctl(%q) returned %d (%s)", name, e, errnoName(e))
	}
	out := make([]byte, 8+size)
	if err := sc.s.in.Read(sc.addr+scrLen, out); err != nil {
		return nil, err
	}
	if n := binary.LittleEndian.Uint64(out); n != uint64(size) {
		return nil, errCall(sc.s.t.pid, "mallctl(%q) has %d bytes, memdoctor expected %d", name, n, size)
	}
	return out[8:], nil
}

// mallctlU64 reads a size_t, ssize_t or uint64_t control.
func (sc *scratch) mallctlU64(ctx context.Context, name string) (uint64, error) {
	b, err := sc.mallctlRead(ctx, name, 8, false)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// mallctlCall calls a control that takes and returns nothing (purge),
// or writes a uint64 (epoch); both may nest locks.
func (sc *scratch) mallctlCall(ctx context.Context, name string, value *uint64) error {
	if len(name) >= maxNameLen {
		return fmt.Errorf("mallctl %q: name too long", name)
	}
	var head [scrName]byte
	newp, newlen := uint64(0), uint64(0)
	if value != nil {
		binary.LittleEndian.PutUint64(head[scrIn:], *value)
		newp, newlen = sc.addr+scrIn, 8
	}
	if err := sc.s.in.Write(sc.addr, append(head[:], append([]byte(name), 0)...)); err != nil {
		return err
	}
	rc, err := sc.s.callAs(ctx, "mallctl", "mallctl(\""+name+"\")", true, sc.addr+scrName, 0, 0, newp, newlen)
	if err != nil {
		return err
	}
	if e := int32(uint32(rc)); e != 0 {
		return errCall(sc.s.t.pid, "mallctl(%q) returned %d (%s)", name, e, errnoName(e))
	}
	return nil
}

func errnoName(e int32) string {
	switch e {
	case 2:
		return "ENOENT: this jemalloc lacks it (built without statistics?)"
	case 11:
		return "EAGAIN"
	case 14:
		return "EFAULT"
	case 22:
		return "EINVAL"
	case 1:
		return "EPERM"
	}
	return "errno " + strconv.Itoa(int(e))
}

// tcProperty reads one of gperftools' numeric properties.
func (sc *scratch) tcProperty(ctx context.Context, name string) (int64, error) {
	if len(name) >= maxNameLen {
		return 0, fmt.Errorf("property %q: name too long", name)
	}
	var head [scrName]byte
	if err := sc.s.in.Write(sc.addr, append(head[:], append([]byte(name), 0)...)); err != nil {
		return 0, err
	}
	ok, err := sc.s.callAs(ctx, "MallocExtension_GetNumericProperty", "MallocExtension_GetNumericProperty(\""+name+"\")", false, sc.addr+scrName, sc.addr+scrLen)
	if err != nil {
		return 0, err
	}
	if int32(uint32(ok)) == 0 {
		return 0, errCall(sc.s.t.pid, "tcmalloc has no property %q", name)
	}
	var v [8]byte
	if err := sc.s.in.Read(sc.addr+scrLen, v[:]); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(v[:])), nil
}

// readNative reads the allocator's figures in an open session.
func (s *session) readNative(ctx context.Context) (*NativeStats, error) {
	ns := &NativeStats{Allocator: s.t.server.Name, Object: s.t.server.Object}
	err := s.withScratch(ctx, func(sc *scratch) error {
		switch s.t.server.Name {
		case inject.AllocJemalloc:
			return sc.readJemalloc(ctx, ns)
		case inject.AllocTcmalloc:
			return sc.readTcmalloc(ctx, ns)
		case inject.AllocMimalloc:
			return sc.readMimalloc(ctx, ns)
		}
		return fmt.Errorf("%w: memdoctor does not call into %s", ErrNotGlibc, s.t.server.Name)
	})
	if err != nil {
		return nil, err
	}
	if s.t.server.Name == inject.AllocMimalloc {
		ns.Unknown = "mimalloc does not count what is allocated (its statistics are off in release builds): how much of its committed memory is free, and what mi_collect(true) gives back, is known only by calling it"
	}
	if s.t.server.Name == inject.AllocTcmalloc {
		ns.ReleaseRate = readEnv(s.t.pid, "TCMALLOC_RELEASE_RATE")["TCMALLOC_RELEASE_RATE"]
		if v, err := strconv.ParseFloat(ns.ReleaseRate, 64); err != nil || !(v >= 0 && v <= 1e6) {
			ns.ReleaseRate = "" // not a rate: the process' own, not printed
		}
	}
	return ns, nil
}

func (sc *scratch) readJemalloc(ctx context.Context, ns *NativeStats) error {
	one := uint64(1)
	if err := sc.mallctlCall(ctx, "epoch", &one); err != nil {
		return err
	}
	i64 := func(name string) (*int64, error) {
		v, err := sc.mallctlU64(ctx, name)
		if err != nil {
			return nil, err
		}
		x := int64(v)
		return &x, nil
	}
	var (
		err                  error
		allocated, resident  *int64
		page                 *int64
		pdirty, pmuzzy       *int64
		bgOpt, bgOn          []byte
		dirtyDecay, muzzyDec *int64
	)
	for _, r := range []struct {
		name string
		to   **int64
	}{
		{"stats.allocated", &allocated}, {"stats.active", &ns.ActiveBytes}, {"stats.resident", &resident},
		{"stats.mapped", &ns.MappedBytes}, {"stats.retained", &ns.RetainedBytes},
		{"stats.arenas." + jeArenasAll + ".pdirty", &pdirty}, {"stats.arenas." + jeArenasAll + ".pmuzzy", &pmuzzy},
		{"arenas.page", &page}, {"arenas.dirty_decay_ms", &dirtyDecay}, {"arenas.muzzy_decay_ms", &muzzyDec},
	} {
		if *r.to, err = i64(r.name); err != nil {
			return err
		}
	}
	ns.AllocatedBytes, ns.ResidentBytes, ns.PageSize = *allocated, *resident, *page
	ns.DirtyDecayMs, ns.MuzzyDecayMs = dirtyDecay, muzzyDec
	d, m := *pdirty**page, *pmuzzy**page
	ns.DirtyBytes, ns.MuzzyBytes = &d, &m
	ns.FreeResidentBytes = d + m
	if b, err := sc.mallctlRead(ctx, "arenas.narenas", 4, false); err == nil {
		ns.Arenas = int64(binary.LittleEndian.Uint32(b))
	} else {
		return err
	}
	if bgOpt, err = sc.mallctlRead(ctx, "opt.background_thread", 1, false); err == nil {
		v := bgOpt[0] != 0
		ns.BackgroundThread = &v
	}
	if bgOn, err = sc.mallctlRead(ctx, "background_thread", 1, true); err == nil {
		v := bgOn[0] != 0
		ns.BackgroundThreadOn = &v
	}
	if p, err := sc.mallctlU64(ctx, "version"); err == nil && p != 0 {
		var v [96]byte // "5.3.0-0-g" and a 40-digit commit
		if sc.s.in.Read(p, v[:]) == nil {
			n := 0
			for n < len(v) && v[n] != 0 && v[n] >= ' ' && v[n] < 0x7f {
				n++
			}
			if n < len(v) && v[n] == 0 {
				ns.Version = string(v[:n])
			}
		}
	}
	return nil
}

func (sc *scratch) readTcmalloc(ctx context.Context, ns *NativeStats) error {
	var err error
	get := func(name string) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = sc.tcProperty(ctx, name)
		return v
	}
	ns.AllocatedBytes = get("generic.current_allocated_bytes")
	heap := get("generic.heap_size")
	free := get("tcmalloc.pageheap_free_bytes")
	unmapped := get("tcmalloc.pageheap_unmapped_bytes")
	if err != nil {
		return err
	}
	var cache int64
	for _, n := range []string{"tcmalloc.central_cache_free_bytes", "tcmalloc.transfer_cache_free_bytes", "tcmalloc.thread_cache_free_bytes"} {
		if v, err := sc.tcProperty(ctx, n); err == nil {
			cache += v
		} else if errors.Is(err, ErrTimeout) || errors.Is(err, ErrProcessGone) || errors.Is(err, ErrCallFaulted) {
			return err
		}
	}
	ns.HeapSizeBytes, ns.PageheapFreeBytes, ns.PageheapUnmappedBytes, ns.CacheFreeBytes = &heap, &free, &unmapped, &cache
	ns.ResidentBytes = max(0, heap-unmapped)
	ns.FreeResidentBytes = free
	return nil
}

// readMimalloc reads mi_process_info(&elapsed, &user, &system,
// &current_rss, &peak_rss, &current_commit, &peak_commit, &page_faults):
// its committed memory, counted by mimalloc whatever its build (the
// statistics of what is allocated are off in release builds, so mimalloc
// does not say how much of it is free). It takes no lock.
func (sc *scratch) readMimalloc(ctx context.Context, ns *NativeStats) error {
	args := make([]uint64, 8)
	for i := range args {
		args[i] = sc.addr + scrOut + uint64(8*i)
	}
	var zero [64]byte
	if err := sc.s.in.Write(sc.addr+scrOut, zero[:]); err != nil {
		return err
	}
	if _, err := sc.s.callAs(ctx, "mi_process_info", "mi_process_info", false, args...); err != nil {
		return err
	}
	var out [64]byte
	if err := sc.s.in.Read(sc.addr+scrOut, out[:]); err != nil {
		return err
	}
	commit := int64(binary.LittleEndian.Uint64(out[40:]))
	peak := int64(binary.LittleEndian.Uint64(out[48:]))
	ns.CommittedBytes, ns.PeakCommittedBytes = &commit, &peak
	ns.ResidentBytes = commit
	return nil
}

// totals fills the glibc-shaped totals from the allocator's figures, so
// that what reads them (trim's estimate, check --malloc's series) means
// the same: system is what the allocator holds resident, in use what the
// program allocated, free the difference, retained what the treatment
// gives back.
func (ns *NativeStats) totals() Totals {
	return Totals{
		SystemBytes:   ns.ResidentBytes,
		InUseBytes:    ns.AllocatedBytes,
		FreeBytes:     max(0, ns.ResidentBytes-ns.AllocatedBytes),
		RetainedBytes: ns.FreeResidentBytes,
		ArenaCount:    int(ns.Arenas),
	}
}

// nativeInspectAlloc reads the allocator's figures in one session.
func nativeInspectAlloc(ctx context.Context, t *target, opt Options) (*NativeStats, *Pause, error) {
	var ns *NativeStats
	pause, err := withSession(ctx, t, opt, func(s *session) error {
		var err error
		ns, err = s.readNative(ctx)
		return err
	})
	return ns, pause, err
}

// nativeTreat is the call that gives the allocator's free memory back.
func (t *target) nativeTreat() string {
	switch t.server.Name {
	case inject.AllocJemalloc:
		return "mallctl(\"arena." + jeArenasAll + ".purge\")"
	case inject.AllocTcmalloc:
		return "MallocExtension_ReleaseFreeMemory()"
	case inject.AllocMimalloc:
		return "mi_collect(true)"
	}
	return ""
}

// treatNative makes that call in an open session.
func (s *session) treatNative(ctx context.Context) error {
	switch s.t.server.Name {
	case inject.AllocJemalloc:
		return s.withScratch(ctx, func(sc *scratch) error {
			return sc.mallctlCall(ctx, "arena."+jeArenasAll+".purge", nil)
		})
	case inject.AllocTcmalloc:
		_, err := s.callAs(ctx, "MallocExtension_ReleaseFreeMemory", s.t.nativeTreat(), false)
		return err
	case inject.AllocMimalloc:
		// mi_collect(true): the calling thread's heap, the segments other
		// threads abandoned, and the OS pages mimalloc keeps to reuse; its
		// locks are taken one at a time (the abandoned list, the arena).
		_, err := s.callAs(ctx, "mi_collect", s.t.nativeTreat(), false, 1)
		return err
	}
	return fmt.Errorf("%w: memdoctor does not call into %s", ErrNotGlibc, s.t.server.Name)
}

// nativeTrimSteps says what Trim does in a process whose malloc another
// allocator serves.
func (t *target) nativeTrimSteps() []string {
	steps := TrimSteps(t.pid)
	steps[1] = fmt.Sprintf("find %s's %s in %s, the object that serves pid %d's malloc (its dynamic symbols), and __errno_location in its libc.so.6", t.server.Name, t.nativeTreat(), path.Base(t.server.Object), t.pid)
	what := "call " + t.nativeTreat()
	if t.server.Name == inject.AllocJemalloc {
		what = "map one page of scratch memory in the process, call " + t.nativeTreat() + " (every arena's dirty and muzzy pages given back), unmap the page"
	}
	steps[4] = "save errno; " + what + " on that thread; write errno back"
	return steps
}

// inspectNative is Inspect for a process whose malloc jemalloc or
// tcmalloc serves: always a call (the preload library reads glibc's
// malloc only).
func inspectNative(ctx context.Context, t *target, opt Options, rep *Report) error {
	if opt.Method == MethodPreload {
		return fmt.Errorf("%w: pid %d allocates with %s, which memdoctor's preload library does not read: use --method ptrace", ErrPreload, t.pid, t.server.Name)
	}
	if opt.NoSandboxed {
		if sb := t.sandboxed(); sb != "" {
			return fmt.Errorf("%w: pid %d (%s) %s: skipped without stopping it", ErrSeccomp, t.pid, t.comm, sb)
		}
	}
	if err := t.checkAttach(); err != nil {
		return err
	}
	rep.Allocator = t.server.Name
	ns, pause, err := nativeInspectAlloc(ctx, t, opt)
	rep.Pause = pause
	if err != nil {
		return err
	}
	rep.Source, rep.Native = "ptrace", ns
	rep.Totals = ns.totals()
	if m, err := readMemory(t.pid, true); err == nil {
		rep.Process = m
	}
	return nil
}

// trimNative is Trim for jemalloc and tcmalloc: the treatment call, with
// RSS read around it as for malloc_trim.
func trimNative(ctx context.Context, t *target, opt Options, res *TrimResult) error {
	res.Allocator, res.Call, res.GlibcVersion = t.server.Name, t.nativeTreat(), ""
	if opt.Method == MethodPreload {
		return fmt.Errorf("%w: pid %d allocates with %s, which memdoctor's preload library does not treat: use --method ptrace", ErrPreload, t.pid, t.server.Name)
	}
	if err := t.checkAttach(); err != nil {
		return err
	}
	res.Source = "ptrace"
	pssBefore, _ := readMemory(t.pid, true)
	var before, after processMemory
	pause, err := withSession(ctx, t, opt, func(s *session) error {
		var err error
		if before, err = readMemory(t.pid, false); err != nil {
			return err
		}
		if err = s.treatNative(ctx); err != nil {
			return err
		}
		after, err = readMemory(t.pid, false)
		return err
	})
	pssAfter, _ := readMemory(t.pid, true)
	before.PssAnon, after.PssAnon = pssBefore.PssAnon, pssAfter.PssAnon
	res.Pause = pause
	if pause != nil {
		res.PausedMs = pause.StoppedMs
		for _, c := range pause.Calls {
			if c.Function == res.Call {
				res.ElapsedMs = c.Ms
			}
		}
	}
	if err != nil {
		return err
	}
	res.setMemory(before, after)
	return nil
}

// nothingBelow: an expected gain under this is "nothing to offer".
const nothingBelow = 1 << 20

// estimateNative is trim's dry run for jemalloc and tcmalloc: their free
// resident memory, read through their own functions.
func estimateNative(ctx context.Context, t *target, opt Options, noPause bool, est *TrimEstimate) error {
	est.Allocator, est.Call, est.Steps = t.server.Name, t.nativeTreat(), t.nativeTrimSteps()
	if noPause {
		est.Source = "smaps"
		est.Process, _ = readMemory(t.pid, false)
		est.Notes = append(est.Notes, fmt.Sprintf("--no-pause: %s's free pages cannot be told from its used ones without asking it (a call into the process); run without --no-pause for the estimate", t.server.Name))
		return nil
	}
	opt.Method = MethodPtrace
	rep := &Report{PID: t.pid, Comm: t.comm, Allocator: t.server.Name}
	if err := inspectNative(ctx, t, opt, rep); err != nil {
		return err
	}
	est.Source, est.Report, est.Process = rep.Source, rep, rep.Process
	if rep.Native.Unknown != "" {
		ub := max(0, min(rep.Native.ResidentBytes, rep.Process.RssAnon))
		est.UpperBoundBytes = &ub
		est.Notes = append(est.Notes, rep.Native.Unknown)
		return nil
	}
	r := rep.Native.FreeResidentBytes
	g := max(0, min(r, rep.Process.RssAnon))
	est.RetainedBytes, est.ExpectedGainBytes = &r, &g
	if g < nothingBelow {
		est.Nothing = fmt.Sprintf("%s holds %s of free pages it can give back", t.server.Name, humanBytes(g))
		if ns := rep.Native; ns.ResidentBytes-ns.AllocatedBytes >= nothingBelow {
			est.Nothing += fmt.Sprintf("; the other %s it holds beyond what is allocated lies in pages still partly in use (fragmentation), which only the program freeing more, or a restart, gives back", humanBytes(ns.ResidentBytes-ns.AllocatedBytes-g))
		}
	}
	return nil
}

// humanBytes is a short size for sentences (MiB with one decimal).
func humanBytes(n int64) string {
	if n < 1<<20 {
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}
