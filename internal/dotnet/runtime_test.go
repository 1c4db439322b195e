//go:build linux

package dotnet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// venvPython is the Python of the venv scripts/install-test-deps.sh makes
// with the .NET Core 3.1 runtime (PyPI dotnetcore2) and pythonnet.
const venvPython = "/opt/memdoctor-test/dotnet/bin/python"

func runtimePython(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(venvPython); err != nil {
		t.Skipf("no .NET runtime for the tests (%v): run scripts/install-test-deps.sh as root", err)
	}
	if out, err := exec.Command(venvPython, "-c", "import dotnetcore2, pythonnet").CombinedOutput(); err != nil {
		t.Skipf("the .NET test venv is incomplete (%v: %s): run scripts/install-test-deps.sh as root", err, out)
	}
	return venvPython
}

// loadProc is a running gcload.py.
type loadProc struct {
	cmd   *exec.Cmd
	pid   int
	mu    sync.Mutex
	lines []string
	// ready is the fields of its "ready" line.
	ready []string
}

func (l *loadProc) output() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// startLoad starts testdata/gcload.py in mode for at most life seconds
// and waits until its runtime is up.
func startLoad(t testing.TB, mode string, life int, env ...string) *loadProc {
	t.Helper()
	script, err := filepath.Abs("testdata/gcload.py")
	if err != nil {
		t.Fatal(err)
	}
	return startLoadScript(t, script, mode, life, env...)
}

// startLoadScript is startLoad running a copy of gcload.py at script.
func startLoadScript(t testing.TB, script, mode string, life int, env ...string) *loadProc {
	t.Helper()
	py := runtimePython(t)
	cmd := exec.Command(py, script, mode, strconv.Itoa(life))
	// Its diagnostics socket and debug pipes go in a directory of this
	// test's, not in /tmp, where a killed runtime leaves them behind.
	cmd.Env = append(append(os.Environ(), "TMPDIR="+t.TempDir()), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &loadProc{cmd: cmd, pid: cmd.Process.Pid}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ready ") {
				ready <- line
				continue
			}
			l.mu.Lock()
			l.lines = append(l.lines, line)
			l.mu.Unlock()
		}
	}()
	select {
	case line := <-ready:
		t.Logf("pid %d: %s", l.pid, line)
		l.ready = strings.Fields(line)
	case <-time.After(60 * time.Second):
		t.Fatalf("gcload.py %s: the runtime did not start within 60 s", mode)
	}
	return l
}

// traceFor runs a GC session on pid for d, keeping the raw stream too.
func traceFor(t testing.TB, pid int, d time.Duration, verbose bool) (*GCStats, []byte) {
	t.Helper()
	st, _, raw := traceWith(t, pid, d, GCProviders(verbose))
	return st, raw
}

// traceWith runs a session with provs on pid for d: what it saw of the
// collector and the counters, and the raw stream.
func traceWith(t testing.TB, pid int, d time.Duration, provs []Provider) (*GCStats, *Counters, []byte) {
	t.Helper()
	return traceWithOpt(t, pid, d, SessionOptions{Providers: provs})
}

// traceWithOpt is traceWith with the session's options.
func traceWithOpt(t testing.TB, pid int, d time.Duration, opt SessionOptions) (*GCStats, *Counters, []byte) {
	t.Helper()
	ep, err := Find(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	// The runtime keys its socket by the process' start time.
	if stat, err := procfs.Live().ProcStat(pid); err == nil {
		if want := fmt.Sprintf("-%d-socket", stat.StartTimeTicks); !strings.HasSuffix(ep.Path, want) {
			t.Errorf("socket %s, want the key of its start time (%s)", ep.Path, want)
		}
	}
	var raw bytes.Buffer
	first := true
	dial := func(ctx context.Context) (net.Conn, error) {
		c, err := ep.Dial(ctx)
		if err == nil && first {
			first = false
			return &teeConn{Conn: c, w: &raw}, nil
		}
		return c, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	st, cn := NewGCStats(), NewCounters()
	p, err := Trace(ctx, dial, opt, func(e *Event) {
		st.Add(e)
		cn.Add(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d blocks, %d events, %d bytes; gen %v induced %v large %v reasons %v pauses %d (%.4f s, max %.4f) heap %v loh %d ticks %d small %d large %d",
		p.Blocks, p.Events, raw.Len(), st.Collections, st.Induced, st.LargeTriggered, st.Reasons, st.Pauses, st.PauseSeconds, st.Max,
		st.Gen, st.LOH, st.Ticks, st.AllocSmall, st.AllocLarge)
	if cn.Reports > 0 {
		t.Logf("counters: %d reports; %v; sums %v", cn.Reports, cn.Last, cn.Sum)
	}
	return st, cn, raw.Bytes()
}

// teeConn keeps what is read after the 20-byte answer header and its
// 8-byte session id: the nettrace stream.
type teeConn struct {
	net.Conn
	w    *bytes.Buffer
	skip int
}

func (c *teeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	data := b[:n]
	if c.skip < headerSize+8 {
		k := min(len(data), headerSize+8-c.skip)
		c.skip += k
		data = data[k:]
	}
	c.w.Write(data)
	return n, err
}

func TestRealRuntimeBusy(t *testing.T) {
	l := startLoad(t, "busy", 40)
	st, _ := traceFor(t, l.pid, 3*time.Second, true)
	if st.Induced[2] == 0 {
		t.Errorf("no induced gen2 collection seen: %v", st.Reasons)
	}
	if st.AllocLarge == 0 {
		t.Errorf("no large allocation tick seen")
	}
	if st.Pauses == 0 || !st.HeapSeen {
		t.Errorf("pauses %d, heap statistics %v", st.Pauses, st.HeapSeen)
	}
}

// TestRecordCaptures re-records the captures the parser tests read
// (testdata/*.nettrace) when MEMDOCTOR_RECORD_NETTRACE names their
// directory (MEMDOCTOR_RECORD_ONLY=busy-counters: that one only).
func TestRecordCaptures(t *testing.T) {
	dir := os.Getenv("MEMDOCTOR_RECORD_NETTRACE")
	if dir == "" {
		t.Skip("set MEMDOCTOR_RECORD_NETTRACE=testdata to re-record the captures")
	}
	for _, c := range []struct {
		name, mode string
		d          time.Duration
		verbose    bool
		counters   bool
	}{
		{"busy-info", "busy", 1500 * time.Millisecond, false, false},
		{"busy-verbose", "busy", time.Second, true, false},
		{"quiet-info", "quiet", time.Second, false, false},
		{"busy-counters", "busy", 2500 * time.Millisecond, false, true},
	} {
		if only := os.Getenv("MEMDOCTOR_RECORD_ONLY"); only != "" && only != c.name {
			continue
		}
		l := startLoad(t, c.mode, 30)
		provs := GCProviders(c.verbose)
		if c.counters {
			provs = append(provs, CounterProvider(1))
		}
		_, _, raw := traceWith(t, l.pid, c.d, provs)
		raw = cutCapture(t, raw, c.counters)
		if err := os.WriteFile(filepath.Join(dir, c.name+"-3.1.nettrace"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cutCapture keeps a stream's start up to the end of the first object
// after which 3 collections were seen (and, with counters, a whole report
// of the counters: 19 on 3.1) (else its objects within 8 KB), ended by
// the NullReference tag as a stream stopped there: a few KB instead of
// the whole session and the rundown that ends it.
func cutCapture(t testing.TB, raw []byte, counters bool) []byte {
	t.Helper()
	st, cn := NewGCStats(), NewCounters()
	p := NewParser(bytes.NewReader(raw), Limits{})
	cut, small := int64(0), int64(0)
	p.onObject = func(pos int64) {
		n := st.Collections[0] + st.Collections[1] + st.Collections[2]
		if cut == 0 && n >= 3 && (!counters || cn.Reports >= 19) {
			cut = pos
		}
		if pos <= 8<<10 {
			small = pos
		}
	}
	if err := p.Run(func(e *Event) { st.Add(e); cn.Add(e) }); err != nil {
		t.Fatal(err)
	}
	if cut == 0 {
		cut = small
	}
	return append(raw[:cut:cut], tagNull)
}

// itersAt reads the loop's latest cumulative iteration count.
func (l *loadProc) itersAt() (float64, time.Time) {
	out := l.output()
	for i := len(out) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(out[i], "iters "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n, time.Now()
		}
	}
	return 0, time.Now()
}

// TestSessionCost measures what a GC session costs: the target's loop
// throughput without and with a session (alternating windows), and
// memdoctor's CPU and heap reading a busy process for 3 s. Run with
// MEMDOCTOR_DOTNET_BENCH=1; the figures are logged (docs/runtimes/dotnet.md).
func TestSessionCost(t *testing.T) {
	if os.Getenv("MEMDOCTOR_DOTNET_BENCH") == "" {
		t.Skip("a measurement of a minute: set MEMDOCTOR_DOTNET_BENCH=1")
	}
	loop := startLoad(t, "loop", 120)
	time.Sleep(3 * time.Second)
	const window = 6 * time.Second
	// The target's CPU time (utime+stime, clock ticks of 10 ms): its
	// iterations per CPU second do not move with the host's load as its
	// iterations per second do, and the session's cost to the target is
	// CPU its threads spend writing events.
	ticks := func() float64 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(loop.pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		u, _ := strconv.ParseFloat(f[11], 64)
		s, _ := strconv.ParseFloat(f[12], 64)
		return u + s
	}
	var perCPU [2]struct{ iters, ticks float64 }
	rate := func(session bool) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), window)
		defer cancel()
		n0, t0 := loop.itersAt()
		c0 := ticks()
		defer func() {
			n1, _ := loop.itersAt()
			i := 0
			if session {
				i = 1
			}
			perCPU[i].iters += n1 - n0
			perCPU[i].ticks += ticks() - c0
		}()
		if session {
			ep, err := Find(loop.pid)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = ep.Close() }()
			st := NewGCStats()
			if _, err := Trace(ctx, ep.Dial, SessionOptions{Providers: GCProviders(true)}, st.Add); err != nil {
				t.Fatal(err)
			}
		} else {
			<-ctx.Done()
		}
		n1, t1 := loop.itersAt()
		return (n1 - n0) / t1.Sub(t0).Seconds()
	}
	var without, with []float64
	for i := 0; i < 4; i++ {
		without = append(without, rate(false))
		with = append(with, rate(true))
	}
	t.Logf("loop iterations/s without a session: %.0f", without)
	t.Logf("loop iterations/s with a GC session (verbose): %.0f", with)
	sum := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s
	}
	t.Logf("mean change with a session: %+.2f%%", 100*(sum(with)/sum(without)-1))
	a, b := perCPU[0].iters/perCPU[0].ticks*100, perCPU[1].iters/perCPU[1].ticks*100
	t.Logf("loop iterations a CPU second of the target: %.0f without a session, %.0f with one (%+.2f%%)", a, b, 100*(b/a-1))

	busy := startLoad(t, "busy", 60)
	// Without and with the counters, one after the other, twice.
	for i := 0; i < 4; i++ {
		provs, what := GCProviders(true), "GC events and allocation ticks"
		if i%2 == 1 {
			provs, what = append(provs, CounterProvider(1)), what+" and the counters"
		}
		var ru0, ru1 syscall.Rusage
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		st, cn, raw := traceWith(t, busy.pid, 3*time.Second, provs)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		runtime.ReadMemStats(&m1)
		cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
		t.Logf("reading a busy process for 3 s (%s): %v CPU, %d bytes of stream, %d GC events, %d counter reports, %d bytes allocated, heap in use %d -> %d bytes, max RSS %d KiB",
			what, cpu, len(raw), st.Events, cn.Reports, m1.TotalAlloc-m0.TotalAlloc, m0.HeapInuse, m1.HeapInuse, ru1.Maxrss)
	}
}

// The settings in force come from the process' runtimeconfig.json and its
// environment as the runtime reads them, and agree with what the runtime
// itself says it runs with: COMPlus_gcServer=1 wins over the file's
// Server false, DOTNET_gcServer=0 is not read by 3.1 (and named so), the
// file's hard limit and concurrent false hold.
func TestRealRuntimeSettings(t *testing.T) {
	runtimePython(t)
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/gcload.py")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "gcload.py")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = 200 << 20
	l := startLoadScript(t, script, "busy", 30, "GCLOAD_KEEP_CONFIG=1", "COMPlus_gcServer=1", "DOTNET_gcServer=0",
		fmt.Sprintf(`GCLOAD_PROPS={"System.GC.Server": false, "System.GC.Concurrent": false, "System.GC.HeapHardLimit": %d}`, limit))
	if len(l.ready) < 6 {
		t.Fatalf("ready line %q", l.ready)
	}
	server, latency, avail := l.ready[3] == "server", l.ready[4], l.ready[5]
	s, notes := ReadSettings(l.pid, l.ready[2], nil)
	t.Logf("settings %s; ignored %v; notes %v", s.Describe(), s.Ignored, notes)
	if v, ok := s.Bool(SetServer); !ok || v != server || s.Values[SetServer].From != "COMPlus_gcServer" {
		t.Errorf("server %v (set %v, from %q); the runtime says server=%v", v, ok, s.Values[SetServer].From, server)
	}
	// Concurrent GC runs Interactive by default, non-concurrent Batch.
	if v, ok := s.Bool(SetConcurrent); !ok || v != (latency == "Interactive") || s.Values[SetConcurrent].From != "gcload.runtimeconfig.json" {
		t.Errorf("concurrent %v (set %v, from %q); the runtime's latency mode is %s", v, ok, s.Values[SetConcurrent].From, latency)
	}
	if got := strconv.FormatUint(s.Values[SetHeapHardLimit].Value, 10); got != avail {
		t.Errorf("heap hard limit %s, the runtime's available memory %s", got, avail)
	}
	if !strings.Contains(strings.Join(s.Ignored, " "), "DOTNET_gcServer") {
		t.Errorf("DOTNET_gcServer, which 3.1 does not read, not named: %v", s.Ignored)
	}
	// The events agree: a Server GC has more than one heap (on more than
	// one processor).
	st, _ := traceFor(t, l.pid, 1500*time.Millisecond, false)
	if runtime.NumCPU() > 1 && server && st.Heaps < 2 {
		t.Errorf("%d heaps in the GC events of a Server GC", st.Heaps)
	}
	if st.LatencyMode != latency {
		t.Errorf("latency mode %q in the events, %q from the runtime", st.LatencyMode, latency)
	}
}

// The System.Runtime counters come in the same session as the GC events
// and agree with them: allocation over the window from alloc-rate against
// the allocation ticks' sample, the generations' sizes, gen2 collections
// counted by both.
func TestRealRuntimeCounters(t *testing.T) {
	l := startLoad(t, "busy", 60)
	// The first report comes an interval after the session starts, later
	// on a loaded host (one session of 3 s saw 1 report instead of 38): a
	// session that saw no whole interval's is run again, 3 times at most.
	var st *GCStats
	var cn *Counters
	for try := 0; try < 3; try++ {
		st, cn, _ = traceWith(t, l.pid, 3*time.Second, append(GCProviders(true), CounterProvider(1)))
		if cn.Reports >= 19 {
			break
		}
	}
	if cn.Reports < 10 || cn.Malformed != 0 {
		t.Fatalf("%d counter reports, %d malformed: want at least one interval's", cn.Reports, cn.Malformed)
	}
	alloc, ticks := cn.Sum["alloc-rate"], float64(st.AllocSmall+st.AllocLarge)
	if alloc < 1<<20 || ticks <= 0 || alloc < ticks/5 || alloc > ticks*5 {
		t.Errorf("alloc-rate says %.0f bytes allocated, the allocation ticks %.0f over the whole session", alloc, ticks)
	}
	for _, n := range []string{"gen-2-size", "loh-size", "gc-heap-size", "working-set"} {
		if v, ok := cn.Get(n); !ok || v <= 0 {
			t.Errorf("counter %s: %v (%v)", n, v, ok)
		}
	}
	// gc-heap-size is in MB on 3.1: read as bytes, it is the heap's
	// magnitude, not a millionth of it.
	if v, _ := cn.Get("gc-heap-size"); v < float64(st.Gen[2])/10 {
		t.Errorf("gc-heap-size %.0f bytes against gen2 %d bytes after a collection", v, st.Gen[2])
	}
	if g2 := cn.Sum["gen-2-gc-count"]; g2 < 1 || g2 > float64(st.Collections[2])+5 {
		t.Errorf("gen-2-gc-count counted %.0f collections, the events %d", g2, st.Collections[2])
	}
}

// .NET Core 3.1 answers unknown command to ProcessInfo and
// ProcessEnvironment (they came with .NET 5): the client says so.
func TestRealRuntimeProcessInfo(t *testing.T) {
	l := startLoad(t, "quiet", 20)
	ep, err := Find(l.pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
	pi, err := GetProcessInfo(context.Background(), ep.Dial, 3*time.Second)
	if MajorVersion(l.ready[2]) < 5 {
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("ProcessInfo of %s: %+v, %v; want unknown command", l.ready[2], pi, err)
		}
		_, err = GetEnvironment(context.Background(), ep.Dial, 3*time.Second, EnvNames())
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("ProcessEnvironment of %s: %v; want unknown command", l.ready[2], err)
		}
		return
	}
	if err != nil || pi.PID == 0 || pi.OS == "" {
		t.Errorf("ProcessInfo: %+v, %v", pi, err)
	}
}
