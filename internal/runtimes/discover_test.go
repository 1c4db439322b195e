package runtimes

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Discovery parses only the runtime's series of a page: every stored page
// of a runtime normalises to the same reading from them as from the whole
// page, and an application's series are left out.
func TestRuntimeSeriesKeepsWhatNormalizeReads(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("testdata/pages/*.prom")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		app := "# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 7\n"
		whole, err := ParsePage(append([]byte(app), b...))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		kept, err := ParsePage(runtimeSeries(append([]byte(app), b...)))
		if err != nil {
			t.Fatalf("%s filtered: %v", p, err)
		}
		if kept["http_requests_total"] != nil {
			t.Errorf("%s: the application's series was kept", p)
		}
		a, okA := Normalize(whole, "u")
		k, okK := Normalize(kept, "u")
		if !okA || !okK || !reflect.DeepEqual(a.Metrics(), k.Metrics()) {
			t.Errorf("%s: the runtime's reading differs when only its series are parsed:\n%v\n%v", p, a.Metrics(), k.Metrics())
		}
	}
}

func TestLoopbackURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1":  "http://127.0.0.1:9/metrics",
		"127.0.0.5":  "http://127.0.0.5:9/metrics",
		"0.0.0.0":    "http://127.0.0.1:9/metrics",
		"::1":        "http://[::1]:9/metrics",
		"::":         "http://[::1]:9/metrics",
		"10.1.2.3":   "",
		"fe80::1":    "",
		"2001:db8::": "",
	} {
		if got := loopbackURL(net.ParseIP(in), 9); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// The ports discovery asks for a process are its own listening sockets
// reachable on loopback: not a socket it listens on at another address
// only, not a child's port, not a connected socket.
func TestDiscoverCandidatesOwnLoopbackOnly(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("needs Linux /proc")
	}
	fsys := procfs.NewFS("/")
	me := os.Getpid()
	var want []string
	listen := func(network, addr string) *net.TCPListener {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("%s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		return ln.(*net.TCPListener)
	}
	lo := listen("tcp4", "127.0.0.1:0")
	want = append(want, fmt.Sprintf("http://127.0.0.1:%d/metrics", lo.Addr().(*net.TCPAddr).Port))
	any6 := listen("tcp6", "[::]:0")
	want = append(want, fmt.Sprintf("http://[::1]:%d/metrics", any6.Addr().(*net.TCPAddr).Port))
	// a connected socket (a client of lo) is not listening
	c, err := net.Dial("tcp4", lo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var elsewhere int
	if ip := nonLoopback(); ip != "" {
		elsewhere = listen("tcp4", ip+":0").Addr().(*net.TCPAddr).Port
	}
	// a child listening on loopback on its own
	child := exec.Command("/usr/bin/python3", "-c", "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Skipf("python3: %v", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	buf := make([]byte, 16)
	n, _ := out.Read(buf)
	childPort, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child's port: %q", buf[:n])
	}

	d := newDiscoverer(fsys)
	got, why := d.candidates(me)
	for _, u := range want {
		if !slices.Contains(got, u) && len(got) < discoverPorts {
			t.Errorf("%s not among the candidates %v (%s)", u, got, why)
		}
	}
	for _, u := range got {
		if strings.HasSuffix(u, ":"+strconv.Itoa(childPort)+"/metrics") {
			t.Errorf("the child's port %d is among this process' candidates %v", childPort, got)
		}
		if elsewhere > 0 && strings.HasSuffix(u, ":"+strconv.Itoa(elsewhere)+"/metrics") {
			t.Errorf("the port %d listening on a non-loopback address only is among the candidates %v", elsewhere, got)
		}
	}
	// and the child's own candidates are its port
	deadline := time.Now().Add(5 * time.Second)
	for {
		cg, _ := newDiscoverer(fsys).candidates(child.Process.Pid)
		if slices.Equal(cg, []string{fmt.Sprintf("http://127.0.0.1:%d/metrics", childPort)}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child pid %d: candidates %v, want its port %d", child.Process.Pid, cg, childPort)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func nonLoopback() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// The socket diagnostics list this test's own listeners, with the port,
// address and inode /proc/net/tcp gives them.
func TestOwnListeningAgreesWithProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("needs Linux /proc")
	}
	var lns []net.Listener
	for _, a := range []string{"127.0.0.1:0", "0.0.0.0:0", "[::1]:0", "[::]:0"} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Logf("%s: %v", a, err)
			continue
		}
		defer func() { _ = ln.Close() }()
		lns = append(lns, ln)
	}
	diag, err := ownListening()
	if err != nil {
		t.Fatal(err)
	}
	var proc []listenSock
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		proc = append(proc, parseListening(b)...)
	}
	key := func(s listenSock) string { return fmt.Sprintf("%s %d %d", s.ip, s.port, s.inode) }
	for _, ln := range lns {
		port := ln.Addr().(*net.TCPAddr).Port
		var inProc, inDiag []string
		for _, s := range proc {
			if s.port == port {
				inProc = append(inProc, key(s))
			}
		}
		for _, s := range diag {
			if s.port == port {
				inDiag = append(inDiag, key(s))
			}
		}
		if len(inProc) != 1 || !slices.Equal(inProc, inDiag) {
			t.Errorf("%s: /proc says %v, the socket diagnostics %v", ln.Addr(), inProc, inDiag)
		}
	}
}
