//go:build linux

package dotnet

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	py := runtimePython(t)
	script, err := filepath.Abs("testdata/gcload.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script, mode, strconv.Itoa(life))
	cmd.Env = append(os.Environ(), env...)
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
	case <-time.After(60 * time.Second):
		t.Fatalf("gcload.py %s: the runtime did not start within 60 s", mode)
	}
	return l
}

// traceFor runs a GC session on pid for d, keeping the raw stream too.
func traceFor(t testing.TB, pid int, d time.Duration, verbose bool) (*GCStats, []byte) {
	t.Helper()
	ep, err := Find(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ep.Close() }()
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
	st := NewGCStats()
	p, err := Trace(ctx, dial, SessionOptions{Providers: GCProviders(verbose)}, st.Add)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d blocks, %d events, %d bytes; gen %v induced %v large %v reasons %v pauses %d (%.4f s, max %.4f) heap %v loh %d ticks %d small %d large %d",
		p.Blocks, p.Events, raw.Len(), st.Collections, st.Induced, st.LargeTriggered, st.Reasons, st.Pauses, st.PauseSeconds, st.Max,
		st.Gen, st.LOH, st.Ticks, st.AllocSmall, st.AllocLarge)
	return st, raw.Bytes()
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
// directory.
func TestRecordCaptures(t *testing.T) {
	dir := os.Getenv("MEMDOCTOR_RECORD_NETTRACE")
	if dir == "" {
		t.Skip("set MEMDOCTOR_RECORD_NETTRACE=testdata to re-record the captures")
	}
	for _, c := range []struct {
		name, mode string
		d          time.Duration
		verbose    bool
	}{
		{"busy-info", "busy", 1500 * time.Millisecond, false},
		{"busy-verbose", "busy", time.Second, true},
		{"quiet-info", "quiet", time.Second, false},
	} {
		l := startLoad(t, c.mode, 30)
		_, raw := traceFor(t, l.pid, c.d, c.verbose)
		raw = cutCapture(t, raw)
		if err := os.WriteFile(filepath.Join(dir, c.name+"-3.1.nettrace"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cutCapture keeps a stream's start up to the end of the first object
// after which 3 collections were seen (else its objects within 8 KB), ended by
// the NullReference tag as a stream stopped there: a few KB instead of
// the whole session and the rundown that ends it.
func cutCapture(t testing.TB, raw []byte) []byte {
	t.Helper()
	st := NewGCStats()
	p := NewParser(bytes.NewReader(raw), Limits{})
	cut, small := int64(0), int64(0)
	p.onObject = func(pos int64) {
		n := st.Collections[0] + st.Collections[1] + st.Collections[2]
		if cut == 0 && n >= 3 {
			cut = pos
		}
		if pos <= 8<<10 {
			small = pos
		}
	}
	if err := p.Run(st.Add); err != nil {
		t.Fatal(err)
	}
	if cut == 0 {
		cut = small
	}
	return append(raw[:cut:cut], tagNull)
}
