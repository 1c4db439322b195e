//go:build linux

package dotnet

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// fakePort is a diagnostics port served by the test itself: serve is
// called for every connection.
func fakePort(t *testing.T, serve func(c net.Conn)) *Endpoint {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "dotnet-diagnostic-1-2-socket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				serve(c)
			}()
		}
	}()
	d, _, err := safeio.OpenDirBeneath("/", strings.TrimPrefix(dir, "/"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return &Endpoint{PID: os.Getpid(), Path: dir + "/dotnet-diagnostic-1-2-socket", dir: d, name: "dotnet-diagnostic-1-2-socket"}
}

func okAnswer(payload []byte) []byte {
	b, _ := message(setServer, respOK, payload)
	return b
}

// readRequest reads one request as the runtime would: its command set and
// command.
func readRequest(c net.Conn) (set, cmd byte, err error) {
	h, _, ok := readFullRequest(c)
	if !ok {
		return 0, 0, errors.New("a request cut short")
	}
	return h[16], h[17], nil
}

var quick = SessionOptions{Answer: 300 * time.Millisecond, Drain: 300 * time.Millisecond}

// runBounded runs a session for window and checks it ends within bound,
// returning its error.
func runBounded(t *testing.T, ep *Endpoint, window, bound time.Duration, opt SessionOptions) (*GCStats, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	st := NewGCStats()
	start := time.Now()
	_, err := Trace(ctx, ep.Dial, opt, st.Add)
	if d := time.Since(start); d > bound {
		t.Errorf("the session took %v, more than %v", d, bound)
	}
	return st, err
}

func TestHostileGarbage(t *testing.T) {
	ep := fakePort(t, func(c net.Conn) {
		_, _, _ = readRequest(c)
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n"))
	})
	_, err := runBounded(t, ep, time.Second, 2*time.Second, quick)
	if !errors.Is(err, ErrProtocol) {
		t.Errorf("garbage answer: %v, want ErrProtocol", err)
	}
}

func TestHostileSilent(t *testing.T) {
	ep := fakePort(t, func(c net.Conn) {
		_, _, _ = readRequest(c)
		time.Sleep(5 * time.Second)
	})
	_, err := runBounded(t, ep, 10*time.Second, 2*time.Second, quick)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("an answer that never comes: %v, want a timeout", err)
	}
}

func TestHostileRefusal(t *testing.T) {
	ep := fakePort(t, func(c net.Conn) {
		_, _, _ = readRequest(c)
		b, _ := message(setServer, respError, binary.LittleEndian.AppendUint32(nil, 0x80131384))
		_, _ = c.Write(b)
	})
	_, err := runBounded(t, ep, time.Second, 2*time.Second, quick)
	var re *RuntimeError
	if !errors.As(err, &re) || re.HResult != 0x80131384 {
		t.Errorf("a refusal: %v", err)
	}
}

// endless writes a valid stream start, then the same event block forever
// (or until the client goes).
func endless(c net.Conn, block []byte) {
	_, _ = c.Write(okAnswer(binary.LittleEndian.AppendUint64(nil, 7)))
	hdr := append([]byte("Nettrace"), 20, 0, 0, 0)
	hdr = append(hdr, "!FastSerialization.1"...)
	if _, err := c.Write(hdr); err != nil {
		return
	}
	pos := len(hdr)
	for {
		obj := []byte{tagBeginPriv, tagBeginPriv, tagNull, 2, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0}
		obj = append(obj, "EventBlock"...)
		obj = append(obj, tagEnd)
		obj = binary.LittleEndian.AppendUint32(obj, uint32(len(block)))
		for (pos+len(obj))%4 != 0 {
			obj = append(obj, 0)
		}
		obj = append(obj, block...)
		obj = append(obj, tagEnd)
		if _, err := c.Write(obj); err != nil {
			return
		}
		pos += len(obj)
	}
}

// A runtime that streams forever and ignores the stop: the session ends
// at its window plus the drain, and holds no more than a block.
func TestHostileEndless(t *testing.T) {
	block := make([]byte, 64<<10)
	binary.LittleEndian.PutUint16(block, 20)
	block[2] = 1 // compressed headers
	// Events of metadata id 0 (unknown: skipped), payload filling the block.
	for off := 20; off+4 <= len(block); off += 4 {
		// flags (a payload length), timestamp delta 0, length 1, one byte
		copy(block[off:], []byte{flDataLength, 0, 1, 0})
	}
	stops := make(chan bool, 4)
	ep := fakePort(t, func(c net.Conn) {
		set, cmd, err := readRequest(c)
		if err != nil {
			return
		}
		if set == setEventPipe && cmd == cmdStopTracing {
			stops <- true
			time.Sleep(2 * time.Second) // never answers the stop either
			return
		}
		endless(c, block)
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st, err := runBounded(t, ep, 500*time.Millisecond, 3*time.Second, quick)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "StopTracing") {
		t.Errorf("a stop never answered: %v, want it said", err)
	}
	select {
	case <-stops:
	default:
		t.Errorf("no StopTracing was sent")
	}
	if st.Events != 0 {
		t.Errorf("%d GC events from a stream of unknown events", st.Events)
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 8<<20 {
		t.Errorf("the heap grew by %d bytes reading an endless stream", grew)
	}
}

// The byte cap ends an endless stream before the window does.
func TestHostileEndlessCapped(t *testing.T) {
	block := make([]byte, 64<<10)
	binary.LittleEndian.PutUint16(block, 20)
	block[2] = 1 // compressed headers
	for off := 20; off+4 <= len(block); off += 4 {
		copy(block[off:], []byte{flDataLength, 0, 1, 0})
	}
	ep := fakePort(t, func(c net.Conn) {
		set, cmd, err := readRequest(c)
		if err != nil {
			return
		}
		if set == setEventPipe && cmd == cmdStopTracing {
			_, _ = c.Write(okAnswer(binary.LittleEndian.AppendUint64(nil, 7)))
			return
		}
		endless(c, block)
	})
	opt := quick
	opt.Limits = Limits{MaxBytes: 4 << 20}
	_, err := runBounded(t, ep, 20*time.Second, 10*time.Second, opt)
	if !errors.Is(err, ErrLimit) {
		t.Errorf("an endless stream under a 4 MiB cap: %v, want ErrLimit", err)
	}
}

// Find takes only the target's own socket: one planted by another process
// (here the test, for a child that serves none) is found but refused at
// the connection; a TMPDIR through a symbolic link, or a socket of
// another user, is not followed or taken.
func TestFindRefuses(t *testing.T) {
	dir := t.TempDir()
	start := func(tmp string) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.Env = []string{"TMPDIR=" + tmp}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitEnviron(t, cmd.Process.Pid, tmp)
		return cmd
	}
	child := start(dir)
	pid := child.Process.Pid
	sock := filepath.Join(dir, "dotnet-diagnostic-"+strconv.Itoa(pid)+"-1-socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	ep, err := Find(pid)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	defer func() { _ = ep.Close() }()
	if ep.Path != sock {
		t.Errorf("found %s, want %s", ep.Path, sock)
	}
	if c, err := ep.Dial(context.Background()); err == nil || !strings.Contains(err.Error(), "not by pid") {
		if c != nil {
			_ = c.Close()
		}
		t.Errorf("a socket the child does not serve: %v, want refused", err)
	}
	// Another user's socket.
	if err := os.Chown(sock, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(pid); err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
		t.Errorf("another user's socket: %v", err)
	}
	// A TMPDIR that is a symbolic link.
	link := filepath.Join(t.TempDir(), "tmp")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	other := start(link)
	if _, err := Find(other.Process.Pid); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a TMPDIR through a link: %v", err)
	}
}

// waitEnviron waits until the kernel shows the child's environment (it
// is laid out after Start returns).
func waitEnviron(t *testing.T, pid int, tmp string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil && strings.Contains(string(b), "TMPDIR="+tmp) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d: no TMPDIR in its environment after 2 s", pid)
}

// A runtime that knows CollectTracing2 is asked with it, without rundown;
// one that refuses it is asked with CollectTracing.
func TestCollectTracing2First(t *testing.T) {
	for _, knows := range []bool{true, false} {
		got := make(chan []byte, 4)
		ep := fakePort(t, func(c net.Conn) {
			h, body, ok := readFullRequest(c)
			if !ok {
				return
			}
			got <- append(h[16:18:18], body...)
			switch {
			case h[17] == cmdCollectTracing2 && !knows:
				b, _ := message(setServer, respError, binary.LittleEndian.AppendUint32(nil, hrUnknownCommand))
				_, _ = c.Write(b)
			case h[17] == cmdCollectTracing2, h[17] == cmdCollectTracing:
				_, _ = c.Write(okAnswer(binary.LittleEndian.AppendUint64(nil, 9)))
				_, _ = c.Write([]byte("Nettrace\x14\x00\x00\x00!FastSerialization.1\x01"))
			case h[17] == cmdStopTracing:
				_, _ = c.Write(okAnswer(binary.LittleEndian.AppendUint64(nil, 9)))
			}
		})
		if _, err := runBounded(t, ep, 300*time.Millisecond, 2*time.Second, quick); err != nil {
			t.Fatalf("knows CollectTracing2 %v: %v", knows, err)
		}
		first := <-got
		if first[0] != setEventPipe || first[1] != cmdCollectTracing2 {
			t.Fatalf("first request: set %d command %d, want CollectTracing2", first[0], first[1])
		}
		// buffer MiB, format, then requestRundown.
		if rundown := first[2+8]; rundown != 0 {
			t.Errorf("CollectTracing2 asks for the rundown (%d)", rundown)
		}
		if !knows {
			if again := <-got; again[1] != cmdCollectTracing {
				t.Errorf("after a refusal of CollectTracing2: command %d, want CollectTracing", again[1])
			}
		}
		if stop := <-got; stop[1] != cmdStopTracing || binary.LittleEndian.Uint64(stop[2:]) != 9 {
			t.Errorf("knows CollectTracing2 %v: last request %v, want StopTracing of session 9", knows, stop)
		}
	}
}

// Of several sockets for one pid, the one keyed by the process' start time
// is taken, else the newest key; a real process' key is its start time.
func TestChooseSocket(t *testing.T) {
	p := "dotnet-diagnostic-7-"
	found := []string{p + "900-socket", p + "10000-socket", p + "x-socket", p + "2000-socket"}
	if got := choose(found, p, 2000); got != p+"2000-socket" {
		t.Errorf("with start 2000: %s", got)
	}
	if got := choose(found, p, 0); got != p+"10000-socket" {
		t.Errorf("without a start: %s, want the largest key", got)
	}
	st, err := procfs.Live().SelfStat()
	if err != nil {
		t.Fatal(err)
	}
	if st.StartTimeTicks == 0 {
		t.Errorf("start time %d", st.StartTimeTicks)
	}
}

// ipcStr writes a protocol string.
func ipcStr(b []byte, s string) []byte { return appendString(b, s) }

// ProcessInfo and ProcessEnvironment as a .NET 5+ runtime answers them
// (3.1 answers neither: TestRealRuntimeProcessInfo), and as a hostile
// one does: only the GC variables are kept of the environment, sizes are
// bounded, a silent port ends at the deadline.
func TestProcessInfoAndEnvironment(t *testing.T) {
	le := binary.LittleEndian
	info := le.AppendUint64(nil, 42)
	info = append(info, 0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56, 1, 2, 3, 4, 5, 6, 7, 8)
	info = ipcStr(info, "dotnet app.dll --token abc")
	info = ipcStr(info, "Linux")
	info = ipcStr(info, "x64")
	env := le.AppendUint32(nil, 3)
	env = ipcStr(env, "PATH=/usr/bin")
	env = ipcStr(env, "DOTNET_gcServer=1")
	env = ipcStr(env, "DB_PASSWORD=hunter2")
	var envAnswer []byte
	envAnswer = append(envAnswer, okAnswer(append(le.AppendUint32(nil, uint32(len(env))), 0, 0))...)
	envAnswer = append(envAnswer, env...)
	ep := fakePort(t, func(c net.Conn) {
		_, cmd, err := readRequest(c)
		if err != nil {
			return
		}
		switch cmd {
		case cmdProcessInfo:
			_, _ = c.Write(okAnswer(info))
		case cmdProcessEnvironment:
			_, _ = c.Write(envAnswer)
		}
	})
	ctx := context.Background()
	pi, err := GetProcessInfo(ctx, ep.Dial, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pi.PID != 42 || pi.OS != "Linux" || pi.Arch != "x64" || pi.CommandLine != "dotnet app.dll --token abc" || pi.Cookie != "12345678-1234-5678-0102-030405060708" {
		t.Errorf("ProcessInfo %+v", pi)
	}
	vars, err := GetEnvironment(ctx, ep.Dial, time.Second, EnvNames())
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 1 || vars["DOTNET_gcServer"] != "1" {
		t.Errorf("environment kept %v, want DOTNET_gcServer alone", vars)
	}

	for name, serve := range map[string]func(c net.Conn){
		"huge environment": func(c net.Conn) {
			_, _, _ = readRequest(c)
			_, _ = c.Write(okAnswer(append(le.AppendUint32(nil, 1<<31), 0, 0)))
		},
		"cut environment": func(c net.Conn) {
			_, _, _ = readRequest(c)
			_, _ = c.Write(okAnswer(append(le.AppendUint32(nil, 1000), 0, 0)))
			_, _ = c.Write(env[:20])
		},
		"lying count": func(c net.Conn) {
			_, _, _ = readRequest(c)
			body := le.AppendUint32(nil, 1<<30)
			_, _ = c.Write(okAnswer(append(le.AppendUint32(nil, uint32(len(body))), 0, 0)))
			_, _ = c.Write(body)
		},
		"silent": func(c net.Conn) {
			_, _, _ = readRequest(c)
			time.Sleep(3 * time.Second)
		},
	} {
		ep := fakePort(t, serve)
		start := time.Now()
		if _, err := GetEnvironment(ctx, ep.Dial, 300*time.Millisecond, EnvNames()); err == nil {
			t.Errorf("%s: no error", name)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: %v", name, d)
		}
		if _, err := GetProcessInfo(ctx, ep.Dial, 300*time.Millisecond); err == nil {
			t.Errorf("%s: ProcessInfo: no error", name)
		}
	}
	// A string longer than its answer.
	if _, err := parseProcessInfo(ipcStr(make([]byte, 24), "x")[:27]); err == nil {
		t.Errorf("a cut string parsed")
	}
}

// A rundown session asks for the rundown and stops at once; a runtime that
// then streams forever and never answers the stop holds it no longer than
// the answer's deadline and the drain, and its events cost no memory.
func TestHostileRundownEndless(t *testing.T) {
	block := make([]byte, 64<<10)
	binary.LittleEndian.PutUint16(block, 20)
	block[2] = 1
	for off := 20; off+4 <= len(block); off += 4 {
		copy(block[off:], []byte{flDataLength, 0, 1, 0})
	}
	asked := make(chan []byte, 4)
	ep := fakePort(t, func(c net.Conn) {
		h, body, ok := readFullRequest(c)
		if !ok {
			return
		}
		asked <- append(h[16:18:18], body...)
		if h[17] == cmdStopTracing {
			time.Sleep(3 * time.Second)
			return
		}
		endless(c, block)
	})
	cl := NewCallers()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := RundownMethods(context.Background(), ep.Dial, 300*time.Millisecond, cl.Add)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if took > 2*time.Second || err == nil {
		t.Errorf("a rundown that never ends: %v after %v, want an error within 2 s", err, took)
	}
	first := <-asked
	if first[1] != cmdCollectTracing2 || binary.LittleEndian.Uint32(first[2:]) != rundownBufferMB || first[2+8] != 1 {
		t.Errorf("request %x: want CollectTracing2 with %d MB and the rundown", first[:12], rundownBufferMB)
	}
	if stop := <-asked; stop[1] != cmdStopTracing {
		t.Errorf("second request %d, want StopTracing", stop[1])
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 8<<20 || cl.MethodEvents != 0 {
		t.Errorf("the heap grew by %d bytes, %d method events", grew, cl.MethodEvents)
	}
}

// readFullRequest reads one request header and payload as the runtime
// would, keeping both; ok is false when either is cut short.
func readFullRequest(c net.Conn) (h [headerSize]byte, body []byte, ok bool) {
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return h, nil, false
	}
	n := int(binary.LittleEndian.Uint16(h[14:])) - headerSize
	if n < 0 {
		return h, nil, false
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return h, nil, false
	}
	return h, body, true
}
