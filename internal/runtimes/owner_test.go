package runtimes

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

func TestParseProcAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0100007F":                         "127.0.0.1",
		"00000000":                         "0.0.0.0",
		"00000000000000000000000001000000": "::1",
		"00000000000000000000000000000000": "::",
		"0000000000000000FFFF00000100007F": "127.0.0.1", // v4-mapped
		"zz":                               "<nil>",
	} {
		if got := parseProcAddr(in).String(); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestTargetAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:9100/metrics": "127.0.0.1 9100",
		"http://localhost/metrics":      "127.0.0.1 80",
		"https://[::1]/m":               "::1 443",
		"http://example.com:80/":        "", // a name: maybe another host
	} {
		ip, port, ok := targetAddr(in)
		got := ""
		if ok {
			got = ip.String() + " " + strconv.Itoa(port)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// TestSocketOwner: this test process listens on loopback and on the IPv6
// wildcard; each scrape URL leads to it, and a port nobody listens on to
// nobody.
func TestSocketOwner(t *testing.T) {
	fsys := procfs.NewFS("/")
	me := os.Getpid()
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := "127.0.0.1:0"
		if network == "tcp6" {
			addr = "[::]:0"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		go func() { _ = http.Serve(ln, http.NotFoundHandler()) }()
		port := ln.Addr().(*net.TCPAddr).Port
		ip, p, ok := targetAddr("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
		if !ok {
			t.Fatal("targetAddr")
		}
		inodes := listeners(fsys, ip, p)
		if len(inodes) != 1 {
			t.Errorf("%s port %d: %d listening sockets found, want 1", network, port, len(inodes))
		}
		if got := socketOwners(fsys, []int{1, me}, inodes); len(got) != 1 || got[0] != me {
			t.Errorf("%s port %d: owners %v, want [%d]", network, port, got, me)
		}
		_ = ln.Close()
		if n := listeners(fsys, ip, p); len(n) != 0 {
			t.Errorf("%s port %d closed: still %d listeners", network, port, len(n))
		}
	}
}

// A scrape target whose process is not among the reported ones is matched
// to it all the same (its pid label must not come and go with the top N),
// by reading every process' descriptors once; the memo then answers while
// the owner lives, and looks again once it is gone.
func TestScrapeOwnerOutsideReported(t *testing.T) {
	fsys := procfs.NewFS("/")
	me := os.Getpid()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	url := "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/metrics"
	read := func(memo *OwnerMemo) (*Reading, int) {
		sr := &Reading{Target: url, Runtime: Go, Source: "scrape"}
		res := &Result{Readings: []*Reading{sr}}
		unmatched := res.oneEach(fsys, []int{1}, map[int]*Reading{}, memo)
		return sr, unmatched
	}
	if sr, unmatched := read(nil); sr.PID != me || unmatched != 0 {
		t.Fatalf("without a memo: pid %d (unmatched %d), want %d", sr.PID, unmatched, me)
	}
	memo := &OwnerMemo{}
	if sr, _ := read(memo); sr.PID != me {
		t.Fatalf("with a memo: pid %d, want %d", sr.PID, me)
	}
	ip, port, _ := targetAddr(url)
	var ino uint64
	for i := range listeners(fsys, ip, port) {
		ino = i
	}
	if memo.owner[ino] != me {
		t.Fatalf("the memo holds %v for socket %d, want %d", memo.owner, ino, me)
	}
	// While the remembered owner lives its answer stands, unread (pid 1
	// here stands for an owner the socket was handed to).
	memo.owner[ino] = 1
	if sr, _ := read(memo); sr.PID != 1 {
		t.Errorf("the memo's live owner: pid %d, want 1", sr.PID)
	}
	// A remembered owner that is gone: every process is read again.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip(err)
	}
	memo.owner[ino] = gone.Process.Pid
	if sr, _ := read(memo); sr.PID != me || memo.owner[ino] != me {
		t.Errorf("after the remembered owner exited: pid %d, memo %d, want %d", sr.PID, memo.owner[ino], me)
	}
}
