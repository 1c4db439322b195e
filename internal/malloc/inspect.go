package malloc

// Inspect: malloc_info of a running process.
//
// The output never touches the process' file system: the process writes
// malloc_info into memory mapped for the purpose, memdoctor reads that
// memory, then unmaps it:
//
//	buf = mmap(0, N, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0)
//	"w" written at buf                       (through /proc/PID/mem: no call)
//	fp  = fmemopen(buf+4096, N-4096, buf)    (a small malloc for the FILE)
//	malloc_info(0, fp)
//	mallinfo2() into buf+64                  (glibc 2.33+; see below)
//	len = ftell(fp); fclose(fp)
//	read buf+4096 .. +len through /proc/PID/mem (the thread still held)
//	munmap(buf, N)
//
// This avoids every problem of a file: a mount namespace or a private /tmp,
// a read-only root, a user who cannot write there, files left behind, and a
// malloc'd output buffer (open_memstream) whose growth and free would move
// glibc's dynamic mmap threshold. N is sized from the number of heaps in
// the maps (at most ~10 KiB of XML per arena) and grown on overflow.
//
// mallinfo2 returns an 80-byte struct by value: on x86-64 (System V ABI)
// the caller passes the address to fill as a hidden first argument (rdi),
// so calling it with buf+64 fills buf+64.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/preload"
)

// Method selects how the allocator state is read.
type Method string

// Methods.
const (
	// MethodAuto reads the preload library's dump when the process runs
	// it with MEMDOCTOR_STATS set, calls into the process otherwise.
	MethodAuto Method = "auto"
	// MethodPtrace always calls into the process (holding one thread for
	// milliseconds).
	MethodPtrace Method = "ptrace"
	// MethodPreload only asks the preload library, never pauses.
	MethodPreload Method = "preload"
)

// Options tune Inspect, Trim and Estimate.
type Options struct {
	// Timeout bounds the work in the process (default 10 s): no call
	// starts after it; a call waiting on a lock is undone.
	Timeout time.Duration
	// CallGrace: a call that is busy (not waiting on a lock) and still
	// runs this long past Timeout makes OnStuck be told; it is still
	// waited for (default 2 min).
	CallGrace time.Duration
	// OnStuck receives a sentence for the operator (may be nil).
	OnStuck func(string)
	// Mallinfo2 also calls mallinfo2 (glibc 2.33+) as a cross-check of
	// malloc_info: it walks the same free chunks, and about doubles the
	// hold.
	Mallinfo2 bool
	// thread forces the calling thread (tests: every kind of thread).
	thread int
	// Method selects the preload library or a call (default auto).
	Method Method
	// PreloadWait bounds the wait for the preload library's dump
	// (default 5 s; the library looks for requests every second).
	PreloadWait time.Duration
	// NoSandboxed refuses, before any thread is stopped, a process any
	// thread of which runs under seccomp (check --malloc, which chooses
	// its processes itself). Without it a filtered thread is called into
	// only once its filters are proven to allow the calls.
	NoSandboxed bool
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.CallGrace <= 0 {
		o.CallGrace = 2 * time.Minute
	}
	if o.Method == "" {
		o.Method = MethodAuto
	}
	if o.PreloadWait <= 0 {
		o.PreloadWait = 5 * time.Second
	}
	return o
}

// Mallinfo2 is glibc's struct mallinfo2 (glibc 2.33+).
type Mallinfo2 struct {
	Arena    uint64 `json:"arena"`
	Ordblks  uint64 `json:"ordblks"`
	Smblks   uint64 `json:"smblks"`
	Hblks    uint64 `json:"hblks"`
	Hblkhd   uint64 `json:"hblkhd"`
	Usmblks  uint64 `json:"usmblks"`
	Fsmblks  uint64 `json:"fsmblks"`
	Uordblks uint64 `json:"uordblks"`
	Fordblks uint64 `json:"fordblks"`
	Keepcost uint64 `json:"keepcost"`
}

// Report is the allocator state of one process.
type Report struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	// GlibcVersion is the version of the libc.so.6 the process has mapped.
	GlibcVersion string `json:"glibc_version,omitempty"`
	// Source is "ptrace" (memdoctor called into the process) or
	// "preload".
	Source string `json:"source"`
	// Info holds arenas and totals (flattened into the JSON object).
	Info
	// Mallinfo2 is read alongside malloc_info when asked (Options).
	Mallinfo2 *Mallinfo2 `json:"mallinfo2,omitempty"`
	// Process is the process' memory right after the inspection.
	Process processMemory `json:"process"`
	// Pause says how long memdoctor held one thread (ptrace only).
	Pause *Pause `json:"pause,omitempty"`
	// PreloadMs is how long the preload library took to answer.
	PreloadMs float64 `json:"preload_ms,omitempty"`
	// Allocator is the allocator read: glibc, or the one that serves
	// malloc in its place (jemalloc, tcmalloc), whose own figures are in
	// Native; Info's totals then hold them in glibc's terms (system:
	// resident, in use: allocated, retained: what the treatment gives
	// back) and it has no arenas.
	Allocator string       `json:"allocator"`
	Native    *NativeStats `json:"native,omitempty"`
	// Notes are facts worth knowing about the process.
	Notes []string `json:"notes,omitempty"`
	// XML is the malloc_info document as the process wrote it.
	XML []byte `json:"-"`
}

// Inspect reads the malloc state of process pid: from memdoctor's preload
// library when the process runs it with MEMDOCTOR_STATS set (no pause),
// else by calling malloc_info in it (one thread held for milliseconds,
// reported in Report.Pause). The process is never left stopped.
func Inspect(ctx context.Context, pid int, opt Options) (*Report, error) {
	opt = opt.withDefaults()
	t, err := inspectTarget(pid)
	if err != nil {
		return nil, err
	}
	rep := &Report{PID: pid, Comm: t.comm, GlibcVersion: t.glibc, Allocator: "glibc", Notes: t.notes()}
	if t.server.Name != "" {
		return rep, inspectNative(ctx, t, opt, rep)
	}
	usePreload, note, err := choosePreload(t, opt)
	if err != nil {
		return nil, err
	}
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	if usePreload {
		start := time.Now()
		info, xml, err := readPreload(ctx, t, opt)
		if err != nil {
			return nil, err
		}
		rep.Source, rep.Info, rep.XML, rep.PreloadMs = "preload", *info, xml, ms(time.Since(start))
	} else {
		if opt.NoSandboxed {
			if sb := t.sandboxed(); sb != "" {
				return nil, fmt.Errorf("%w: pid %d (%s) %s: skipped without stopping it", ErrSeccomp, pid, t.comm, sb)
			}
		}
		if err := t.checkAttach(); err != nil {
			return nil, err
		}
		info, xml, mi, pause, err := nativeInspect(ctx, t, opt)
		rep.Pause = pause
		if err != nil {
			return rep, err
		}
		rep.Source, rep.Info, rep.XML, rep.Mallinfo2 = "ptrace", *info, xml, mi
	}
	if m, err := readMemory(pid, true); err == nil {
		rep.Process = m
	}
	return rep, nil
}

// choosePreload decides between the preload library and a call.
func choosePreload(t *target, opt Options) (use bool, note string, err error) {
	switch opt.Method {
	case MethodPtrace:
		return false, "", nil
	case MethodPreload:
		if !t.preloadLib {
			return false, "", fmt.Errorf("%w: pid %d does not map %s", ErrPreload, t.pid, preload.LibName)
		}
		if t.statsPath == "" {
			return false, "", fmt.Errorf("%w: pid %d maps %s but was started without %s=PATH, so it takes no requests", ErrPreload, t.pid, preload.LibName, preload.StatsVar)
		}
		return true, "", nil
	case MethodAuto:
	default:
		return false, "", fmt.Errorf("method %q: want auto, ptrace or preload", opt.Method)
	}
	if t.preloadLib && t.statsPath == "" {
		return false, fmt.Sprintf("the process maps %s but has no %s=PATH in its environment, so its stats cannot be asked for: read by calling into it", preload.LibName, preload.StatsVar), nil
	}
	return t.preloadLib, "", nil
}

// notes lists what the maps said that the reader should know.
func (t *target) notes() []string {
	var n []string
	if t.libcDeleted {
		n = append(n, fmt.Sprintf("%s was replaced on disk after the process started: the process still runs the old library (a glibc upgrade without restart)", t.libcPath))
	}
	if t.glibc == "" {
		n = append(n, "glibc version unknown: no release banner readable in the mapped libc.so.6")
	}
	for _, a := range t.allocators {
		if a == t.server.Name {
			continue
		}
		n = append(n, fmt.Sprintf("the process maps lib%s: memory allocated through it is not in glibc's arenas, and neither malloc_info nor malloc_trim see it", a))
	}
	return n
}

// xmlBufferSize sizes the in-process buffer for malloc_info: ~10.5 KiB of
// XML per arena at most (137 bin lines of ~70 bytes), for the main arena,
// every heap in the maps, and slack.
func xmlBufferSize(t *target) int64 {
	n := int64(t.heaps+16) * 12 << 10
	n = max(n, 256<<10)
	const page = 64 << 10 // a multiple of every page size
	return (n + 4096 + page - 1) / page * page
}

// nativeInspect runs malloc_info (and, when asked, mallinfo2) in the
// process. The XML is parsed after the thread is let go.
func nativeInspect(ctx context.Context, t *target, opt Options) (*Info, []byte, *Mallinfo2, *Pause, error) {
	var (
		xml []byte
		mi  *Mallinfo2
	)
	pause, err := withSession(ctx, t, opt, func(s *session) error {
		_, wantMI := s.fn["mallinfo2"]
		wantMI = wantMI && opt.Mallinfo2
		size := xmlBufferSize(t)
		for attempt := 0; ; attempt++ {
			data, m, full, err := s.mallocInfo(ctx, size, wantMI)
			if err != nil {
				return err
			}
			if full && attempt < 2 {
				size *= 8
				continue
			}
			xml, mi = data, m
			return nil
		}
	})
	if err != nil {
		return nil, nil, nil, pause, err
	}
	info, err := ParseInfo(bytes.NewReader(xml))
	if err != nil {
		return nil, nil, nil, pause, fmt.Errorf("pid %d: %w", t.pid, err)
	}
	return info, xml, mi, pause, nil
}

// errCall is a call that ran but failed inside the process.
func errCall(pid int, format string, a ...any) error {
	return fmt.Errorf("inside pid %d: "+format, append([]any{pid}, a...)...)
}

// mallocInfo makes the calls listed at the top of this file; full is true
// when the XML filled the buffer.
func (s *session) mallocInfo(ctx context.Context, size int64, wantMI bool) (data []byte, mi *Mallinfo2, full bool, err error) {
	const (
		protRW   = 0x1 | 0x2
		mapFlags = 0x02 | 0x20 | 0x4000 // MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE
	)
	buf, err := s.call(ctx, "mmap", 0, uint64(size), protRW, mapFlags, ^uint64(0), 0)
	if err != nil {
		return nil, nil, false, err
	}
	if buf == 0 || int64(buf) < 0 && int64(buf) > -4096 {
		return nil, nil, false, errCall(s.t.pid, "mmap of %d bytes failed (out of address space or memory)", size)
	}
	defer func() {
		s.in.WindDown()
		if _, uerr := s.call(ctx, "munmap", buf, uint64(size)); uerr != nil && err == nil {
			err = uerr
		}
	}()
	if err := s.in.Write(buf, []byte("w\x00")); err != nil {
		return nil, nil, false, err
	}
	out := buf + 4096
	room := size - 4096
	fp, err := s.call(ctx, "fmemopen", out, uint64(room), buf)
	if err != nil {
		return nil, nil, false, err
	}
	if fp == 0 {
		return nil, nil, false, errCall(s.t.pid, "fmemopen failed")
	}
	closed := false
	defer func() {
		if !closed {
			s.in.WindDown()
			_, _ = s.call(ctx, "fclose", fp)
		}
	}()
	rc, err := s.call(ctx, "malloc_info", 0, fp)
	if err != nil {
		return nil, nil, false, err
	}
	if int32(uint32(rc)) != 0 {
		return nil, nil, false, errCall(s.t.pid, "malloc_info returned %d", int32(uint32(rc)))
	}
	const miAt = 64
	if wantMI {
		if _, err := s.call(ctx, "mallinfo2", buf+miAt); err != nil {
			return nil, nil, false, err
		}
	}
	pos, err := s.call(ctx, "ftell", fp)
	if err != nil {
		return nil, nil, false, err
	}
	closed = true
	if _, err := s.call(ctx, "fclose", fp); err != nil {
		return nil, nil, false, err
	}
	n := int64(pos)
	if n < 0 || n > room {
		return nil, nil, false, errCall(s.t.pid, "ftell returned %d", int64(pos))
	}
	if n >= room-1 {
		return nil, nil, true, nil
	}
	data = make([]byte, n)
	if err := s.in.Read(out, data); err != nil {
		return nil, nil, false, err
	}
	if wantMI {
		var raw [80]byte
		if err := s.in.Read(buf+miAt, raw[:]); err != nil {
			return nil, nil, false, err
		}
		var v [10]uint64
		for i := range v {
			v[i] = binary.LittleEndian.Uint64(raw[i*8:])
		}
		mi = &Mallinfo2{Arena: v[0], Ordblks: v[1], Smblks: v[2], Hblks: v[3], Hblkhd: v[4],
			Usmblks: v[5], Fsmblks: v[6], Uordblks: v[7], Fordblks: v[8], Keepcost: v[9]}
	}
	return data, mi, false, nil
}

// WillPause reports whether Inspect would hold a thread of the process rather
// than ask its preload library. It is false when Inspect would refuse.
func WillPause(pid int, opt Options) bool {
	opt = opt.withDefaults()
	t, err := inspectTarget(pid)
	if err != nil {
		return false
	}
	use, _, err := choosePreload(t, opt)
	return err == nil && !use && t.checkAttach() == nil
}
