package cgtrace

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
)

// Layout of struct event in cgtrace.c, from its generated Go twin.
var (
	offDuration  = int(unsafe.Offsetof(cgtraceEvent{}.DurationNs))
	offReclaimed = int(unsafe.Offsetof(cgtraceEvent{}.Reclaimed))
	offOp        = int(unsafe.Offsetof(cgtraceEvent{}.Op))
	offPID       = int(unsafe.Offsetof(cgtraceEvent{}.Pid))
	offPPID      = int(unsafe.Offsetof(cgtraceEvent{}.Ppid))
	offHierarchy = int(unsafe.Offsetof(cgtraceEvent{}.Hierarchy))
	offLevel     = int(unsafe.Offsetof(cgtraceEvent{}.Level))
	offComm      = int(unsafe.Offsetof(cgtraceEvent{}.Comm))
	offPath      = int(unsafe.Offsetof(cgtraceEvent{}.Path))
	eventSize    = int(unsafe.Offsetof(cgtraceEvent{}.Path)) + pathLen
)

const (
	commLen = 16
	pathLen = 160
	// bpfStatsRunTime is BPF_STATS_RUN_TIME of linux/bpf.h (named here so
	// the package builds where x/sys/unix lacks Linux's constants).
	bpfStatsRunTime = 0
)

// cstr is the NUL-terminated string at the start of b.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func decode(raw []byte) (Event, bool) {
	if len(raw) < eventSize {
		return Event{}, false
	}
	ne := binary.NativeEndian
	return Event{
		Op:        Op(ne.Uint32(raw[offOp:])),
		PID:       int(ne.Uint32(raw[offPID:])),
		PPID:      int(ne.Uint32(raw[offPPID:])),
		Hierarchy: int(int32(ne.Uint32(raw[offHierarchy:]))),
		Level:     int(int32(ne.Uint32(raw[offLevel:]))),
		Comm:      cstr(raw[offComm : offComm+commLen]),
		Path:      cstr(raw[offPath : offPath+pathLen]),
	}, true
}

// bpfTracer is the loaded, attached program.
type bpfTracer struct {
	objs  cgtraceObjects
	links []link.Link
	rd    *ringbuf.Reader
	// reclaimErr says why reclaim is not traced (nil: it is).
	reclaimErr error
}

func (t *bpfTracer) Close() {
	if t.rd != nil {
		_ = t.rd.Close()
	}
	for _, l := range t.links {
		_ = l.Close()
	}
	_ = t.objs.Close()
}

func loadBPF() (*bpfTracer, error) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return nil, fmt.Errorf("the kernel has no BTF (/sys/kernel/btf/vmlinux): %w", err)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("memlock limit: %w", err)
	}
	t := &bpfTracer{}
	if err := loadCgtraceObjects(&t.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the verifier refused the program: %w", ve)
		}
		return nil, fmt.Errorf("loading the program: %w", err)
	}
	for _, p := range []*ebpf.Program{t.objs.CgroupMkdir, t.objs.CgroupRmdir} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("attaching to the cgroup tracepoints: %w", err)
		}
		t.links = append(t.links, l)
	}
	// Reclaim is a second look: without it the cgroup trace still runs.
	for _, p := range []*ebpf.Program{t.objs.DirectReclaimBegin, t.objs.DirectReclaimEnd,
		t.objs.MemcgReclaimBegin, t.objs.MemcgReclaimEnd, t.objs.KswapdWake} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			t.reclaimErr = fmt.Errorf("reclaim stalls not traced: attaching to the vmscan tracepoints: %w", err)
			break
		}
		t.links = append(t.links, l)
	}
	rd, err := ringbuf.NewReader(t.objs.Events)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("ring buffer: %w", err)
	}
	t.rd = rd
	return t, nil
}

func runBPF(ctx context.Context, opt Options, agg *aggregator) (*Summary, error) {
	t, err := loadBPF()
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if opt.KernelStats {
		if st, err := ebpf.EnableStats(bpfStatsRunTime); err == nil {
			defer func() { _ = st.Close() }()
		}
	}
	start := time.Now()
	end := start.Add(opt.Duration)
	var rec ringbuf.Record
	for {
		now := time.Now()
		stop := !now.Before(end) || ctx.Err() != nil
		// Drain on a timer: the program wakes the reader only when the
		// ring fills up, so a quiet poll costs one epoll_wait.
		next := now.Add(opt.Poll)
		if stop {
			next = now
		} else if next.After(end) {
			next = end
		}
		t.rd.SetDeadline(next)
		for {
			err := t.rd.ReadInto(&rec)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("reading the ring buffer: %w", err)
			}
			agg.addRaw(rec.RawSample)
		}
		if stop {
			break
		}
	}
	var dropped uint64
	_ = t.objs.Dropped.Get(&dropped)
	s := agg.summary("bpf", time.Since(start), int64(dropped))
	if t.reclaimErr != nil {
		s.Notes = append(s.Notes, t.reclaimErr.Error())
	} else {
		s.ReclaimTraced = true
		var wakes [64]uint64
		if err := t.objs.KswapdWakes.Get(&wakes); err == nil {
			for nid, n := range wakes {
				if n > 0 {
					s.KswapdWakes = append(s.KswapdWakes, NodeWakes{Node: nid, Wakes: int64(n)})
				}
			}
		}
	}
	if opt.KernelStats {
		for _, p := range []*ebpf.Program{t.objs.CgroupMkdir, t.objs.CgroupRmdir} {
			if st, err := p.Stats(); err == nil {
				s.KernelRuns += st.RunCount
				s.KernelTime += st.Runtime
			}
		}
	}
	return s, nil
}
