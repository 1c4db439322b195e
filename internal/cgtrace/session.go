package cgtrace

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Tracer is a trace that runs until closed (record --trace): Take returns
// what it saw since the previous Take. Its memory is bounded: the ring
// buffer, the caches of processes and cgroup names, and per interval at
// most maxKeys creators and stall rows.
type Tracer struct {
	opt    Options
	method string
	bpf    *bpfTracer
	tfs    *tracefsTracer
	notes  []string // why a method was not used

	mu    sync.Mutex
	agg   *aggregator
	since time.Time
	err   error // the reader's, once it stopped
	// drained are Takes waiting for the reader to drain the ring.
	drained []chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// Stop ends the reading after a last drain of what the kernel holds; Take
// still returns what it read. Close stops too.
func (t *Tracer) Stop() {
	t.cancel()
	if t.bpf != nil {
		// Wakes a reader waiting for its next poll.
		_ = t.bpf.rd.Flush()
	}
	<-t.done
}

// DefaultPoll is how often the reader drains the BPF ring buffer by
// default: each drain costs a wakeup of this process whether or not there
// is anything to read (about 0.15 % of a core at ten a second, measured);
// cgroup operations are mostly counted in the kernel, and the kernel side
// wakes the reader sooner when the ring is half full.
const DefaultPoll = time.Second

// tracefsPoll is the default drain of a tracefs trace, whose per-CPU
// buffers are the kernel's default size.
const tracefsPoll = 100 * time.Millisecond

// Start loads the tracer (BPF, else tracefs, as opt.Method says) and reads
// it in the background until Close or the end of ctx. opt.Duration is not
// used.
func Start(ctx context.Context, opt Options) (*Tracer, error) {
	if opt.Proc == "" {
		opt.Proc = procfs.ProcMount
	}
	t := &Tracer{opt: opt, agg: newAggregator(opt), done: make(chan struct{})}
	if opt.Method == "" || opt.Method == "bpf" {
		b, err := loadBPF(opt, t.agg.memHier)
		if err == nil {
			t.bpf, t.method = b, "bpf"
		} else {
			t.notes = append(t.notes, "BPF could not trace: "+err.Error())
			if opt.Method == "bpf" {
				return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(t.notes, "; "))
			}
		}
	}
	if t.method == "" {
		f, err := loadTracefs(opt)
		if err != nil {
			t.notes = append(t.notes, "tracefs could not trace: "+err.Error())
			return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(t.notes, "; "))
		}
		t.tfs, t.method = f, "tracefs"
	}
	if t.opt.Poll <= 0 {
		t.opt.Poll = DefaultPoll
		if t.tfs != nil {
			t.opt.Poll = tracefsPoll
		}
	}
	ctx, t.cancel = context.WithCancel(ctx)
	t.since = time.Now()
	go t.read(ctx)
	return t, nil
}

// Method is "bpf" or "tracefs".
func (t *Tracer) Method() string { return t.method }

// read drains the kernel's buffer every opt.Poll (the BPF program wakes it
// sooner only when its ring fills up), and once more when ctx ends.
func (t *Tracer) read(ctx context.Context) {
	defer close(t.done)
	for {
		stop := ctx.Err() != nil
		var err error
		if t.bpf != nil {
			deadline := time.Now()
			if !stop {
				deadline = deadline.Add(t.opt.Poll)
			}
			// A drain returns only once it found the ring empty: those
			// waiting since before it began have their records read.
			t.mu.Lock()
			waiting := t.drained
			t.drained = nil
			t.mu.Unlock()
			// The lock is held only while a record is counted, not while
			// the reader waits for the next.
			err = t.bpf.drain(deadline, func(raw []byte) {
				t.mu.Lock()
				t.agg.addRaw(raw)
				t.mu.Unlock()
			})
			for _, c := range waiting {
				close(c)
			}
		} else {
			t.mu.Lock()
			err = t.tfs.drain(t.agg.add)
			t.mu.Unlock()
			if err == nil && !stop {
				select {
				case <-ctx.Done():
				case <-time.After(t.opt.Poll):
				}
			}
		}
		if err != nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			return
		}
		if stop {
			return
		}
	}
}

// Take returns the trace since the previous Take (or the start) and
// begins the next interval.
func (t *Tracer) Take() *Summary {
	t.drain()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.bpf != nil {
		t.bpf.fold(t.agg)
	}
	s := t.agg.summary(t.method, now.Sub(t.since), 0)
	s.Notes = append(s.Notes, t.notes...)
	if t.bpf != nil {
		t.bpf.take(s, t.opt, t.agg.memcgs)
	} else {
		t.tfs.take(s)
	}
	if t.err != nil {
		s.Notes = append(s.Notes, "the trace stopped: "+t.err.Error())
	}
	t.agg.reset()
	t.since = now
	return s
}

// drain has the reader read what the ring holds now (BPF: the reader
// drains on its own only every opt.Poll), unless it stopped.
func (t *Tracer) drain() {
	if t.bpf == nil {
		return
	}
	c := make(chan struct{})
	t.mu.Lock()
	t.drained = append(t.drained, c)
	t.mu.Unlock()
	select {
	case <-t.done:
		return
	default:
	}
	// The flush ends the reader's wait; the drain after it (which began
	// after c was added) reads the ring to its end.
	_ = t.bpf.rd.Flush()
	for {
		select {
		case <-c:
			return
		case <-t.done:
			return
		case <-time.After(10 * time.Millisecond):
			// The flush may have ended the drain that began before c:
			// wake the next one.
			_ = t.bpf.rd.Flush()
		}
	}
}

// Close stops the trace and removes what it attached.
func (t *Tracer) Close() {
	if t.closed {
		return
	}
	t.closed = true
	t.Stop()
	if t.bpf != nil {
		t.bpf.Close()
	}
	if t.tfs != nil {
		t.tfs.Close()
	}
}

// Run traces for opt.Duration (or until ctx ends).
func Run(ctx context.Context, opt Options) (*Summary, error) {
	t, err := Start(ctx, opt)
	if err != nil {
		return &Summary{Notes: notesOf(err)}, err
	}
	select {
	case <-ctx.Done():
	case <-time.After(opt.Duration):
	}
	// The last drain, then the summary.
	t.Stop()
	s := t.Take()
	t.Close()
	return s, nil
}

func notesOf(err error) []string {
	msg := strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": ")
	return strings.Split(msg, "; ")
}
