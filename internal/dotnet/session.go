package dotnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Dialer opens a new connection to the diagnostics port (Endpoint.Dial).
type Dialer func(ctx context.Context) (net.Conn, error)

// SessionOptions say what a session asks for and how long each step may
// take.
type SessionOptions struct {
	Providers []Provider
	// BufferMB is the runtime's circular buffer for the session (events
	// are dropped, never blocking the target, when it is full).
	BufferMB uint32
	// Answer bounds the wait for each answer of the runtime; Drain the
	// reading of the stream's end after StopTracing.
	Answer, Drain time.Duration
	Limits        Limits
	// Rundown asks the runtime to send, when the session stops, the
	// methods and modules it has loaded (CollectTracing2's
	// requestRundown; a runtime that knows only CollectTracing always
	// sends it).
	Rundown bool
	// KeepStacks keeps the stream's stacks so that each event carries
	// its own (Parser.KeepStacks).
	KeepStacks bool
	// StopAtOnce stops the session as soon as it has started: a session
	// asked only for its rundown.
	StopAtOnce bool
}

// GCProviders asks for the runtime's GC events; verbose adds the
// allocation ticks (one event per ~100 KB allocated).
func GCProviders(verbose bool) []Provider {
	lvl := uint32(LevelInfo)
	if verbose {
		lvl = LevelVerbose
	}
	return []Provider{{Name: RuntimeProvider, Keywords: KeywordGC, Level: lvl}}
}

func (o *SessionOptions) defaults() {
	if len(o.Providers) == 0 {
		o.Providers = GCProviders(false)
	}
	if o.BufferMB == 0 {
		o.BufferMB = 16
	}
	if o.Answer <= 0 {
		o.Answer = 3 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = 3 * time.Second
	}
}

// Trace runs one EventPipe session until ctx ends (the window, a deadline
// or a cancellation), calling fn for every event, then stops it. The
// stream is read to its end after the stop (so the window's last events
// are kept) within opt.Drain. The stop is sent also when the stream
// breaks, so no session is left running in the target. A stream cut at
// the drain's end is no error: what was read stands.
func Trace(ctx context.Context, dial Dialer, opt SessionOptions, fn func(*Event)) (*Parser, error) {
	opt.defaults()
	// CollectTracing2 first (no rundown at the end), CollectTracing on a
	// runtime that does not know it (.NET Core 3.x).
	c, resp, err := start(ctx, dial, opt, true)
	var re *RuntimeError
	if errors.As(err, &re) {
		c, resp, err = start(ctx, dial, opt, false)
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	session := binary.LittleEndian.Uint64(resp)
	// The stream is read with no deadline until the stop; the stop (or the
	// connection's close) ends the read.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	p := NewParser(c, opt.Limits)
	p.KeepStacks = opt.KeepStacks
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- p.Run(func(e *Event) {
			mu.Lock()
			fn(e)
			mu.Unlock()
		})
	}()
	var streamErr error
	stopped := false
	window := ctx.Done()
	if opt.StopAtOnce {
		now := make(chan struct{})
		close(now)
		window = now
	}
	select {
	case <-window:
	case streamErr = <-done:
		stopped = true
	}
	stopErr := stop(dial, session, opt.Answer)
	if !stopped {
		// The runtime ends the stream after the stop; wait for that
		// within Drain, then cut it.
		_ = c.SetReadDeadline(time.Now().Add(opt.Drain))
		streamErr = <-done
		var ne net.Error
		if errors.As(streamErr, &ne) && ne.Timeout() {
			streamErr = nil // cut at the drain's end: what was read stands
		}
	}
	if errors.Is(streamErr, io.EOF) {
		streamErr = nil
	}
	switch {
	case streamErr != nil:
		return p, fmt.Errorf("reading the event stream: %w", streamErr)
	case stopErr != nil:
		return p, stopErr
	}
	return p, nil
}

// start opens a connection and asks for a session; on success the
// connection is left open for the stream.
func start(ctx context.Context, dial Dialer, opt SessionOptions, v2 bool) (net.Conn, []byte, error) {
	name := "CollectTracing"
	if v2 {
		name = "CollectTracing2"
	}
	req, err := collectTracing(opt.BufferMB, opt.Providers, v2, opt.Rundown)
	if err != nil {
		return nil, nil, err
	}
	actx, cancel := context.WithTimeout(ctx, opt.Answer)
	c, err := dial(actx)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	resp, err := func() ([]byte, error) {
		if err := c.SetWriteDeadline(time.Now().Add(opt.Answer)); err != nil {
			return nil, err
		}
		if _, err := c.Write(req); err != nil {
			return nil, fmt.Errorf("sending %s: %w", name, err)
		}
		resp, err := readResponse(c, time.Now().Add(opt.Answer))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(resp) < 8 {
			return nil, fmt.Errorf("%s: %w: an answer of %d bytes, not a session id", name, ErrProtocol, len(resp))
		}
		return resp, nil
	}()
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, resp, nil
}

// RundownMethods runs a session that stops at once, only for its
// rundown (the methods loaded, ReadyToRun ones among them), giving each
// method event to fn; drain bounds each answer and the reading of the
// rundown after the stop (the runtime may answer the stop only once its
// rundown is written; a rundown cut there gives the methods read so far,
// with the error). A session needs a provider: the runtime's at the GC
// keyword and the critical level, which sends nothing of note.
func RundownMethods(ctx context.Context, dial Dialer, drain time.Duration, fn func(*Event)) (*Parser, error) {
	return RundownMethodsWithin(ctx, dial, drain, rundownBufferMB, fn)
}

// RundownMethodsWithin is RundownMethods asking the runtime for a buffer
// of bufferMB (RundownBufferFor).
func RundownMethodsWithin(ctx context.Context, dial Dialer, drain time.Duration, bufferMB uint32, fn func(*Event)) (*Parser, error) {
	return Trace(ctx, dial, SessionOptions{Providers: []Provider{{Name: RuntimeProvider, Keywords: KeywordGC, Level: LevelCritical}},
		BufferMB: bufferMB, Rundown: true, StopAtOnce: true, Answer: drain, Drain: drain}, fn)
}

// RundownBufferFor is the buffer a rundown may ask of a target whose
// memory cgroup can still be charged headroom bytes before a limit
// (limited false: no limit): the runtime takes the buffer from the
// target's memory as it writes the rundown, so at most a quarter of the
// headroom, and no more than rundownBufferMB. ok is false when that is
// under minRundownBufferMB: the rundown is then better not asked (a
// target near its limit is not pushed toward the OOM killer to name a
// caller).
func RundownBufferFor(headroom int64, limited bool) (mb uint32, ok bool) {
	if !limited {
		return rundownBufferMB, true
	}
	q := headroom / 4 >> 20
	if q < minRundownBufferMB {
		return 0, false
	}
	return uint32(min(q, int64(rundownBufferMB))), true
}

// minRundownBufferMB is the least buffer a rundown is asked with: a
// process of 3,800 methods wrote about 1 MB of rundown (3.1.23).
const minRundownBufferMB = 4

// stop sends StopTracing for the session on a connection of its own.
func stop(dial Dialer, session uint64, answer time.Duration) error {
	req, err := stopTracing(session)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), answer)
	defer cancel()
	c, err := dial(ctx)
	if err != nil {
		return fmt.Errorf("StopTracing: %w", err)
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(answer)); err != nil {
		return err
	}
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("sending StopTracing: %w", err)
	}
	if _, err := readResponse(c, time.Now().Add(answer)); err != nil {
		return fmt.Errorf("StopTracing: %w", err)
	}
	return nil
}

// rundownBufferMB is the runtime's buffer for a rundown session, taken
// as the rundown is written and freed with the session: the runtime
// writes the rundown faster than it streams it, and drops what the
// buffer cannot hold (measured on 3.1.23, a process of 24,000 methods:
// 16 MB kept 8,700 of them, 128 MB all).
var rundownBufferMB uint32 = 64
