package runtimes

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// A loopback server of its own (a Python child) that counts the requests
// it is sent, one line each on its standard output, and answers 404 or,
// with page, a Python runtime's page.
func countingServer(t *testing.T, page bool) (pid int, requests func() int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("needs Linux /proc")
	}
	body := ""
	if page {
		body = `# TYPE python_gc_collections_total counter\npython_gc_collections_total{generation=\"0\"} 7\n`
	}
	src := `import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print("request", flush=True)
        body = b"` + body + `"
        self.send_response(200 if body else 404)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print("port", s.server_address[1], flush=True)
s.serve_forever()
`
	cmd := exec.Command("/usr/bin/python3", "-c", src)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("python3: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "port ") {
			t.Fatalf("server said %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start")
	}
	n := 0
	return cmd.Process.Pid, func() int {
		for {
			select {
			case l, ok := <-lines:
				if ok && l == "request" {
					n++
					continue
				}
			case <-time.After(200 * time.Millisecond):
			}
			return n
		}
	}
}

// With a memo (the recorder's), a process whose ports served nothing is
// left alone until Retry has passed, and one that served its page is
// asked at that URL only; without one (check), each reading asks again.
// Before, the recorder asked every silent port at every sample: up to
// discovery's 2 s budget a sample, and samples of a 1 s interval were lost.
func TestDiscoverMemo(t *testing.T) {
	t.Parallel()
	fsys := procfs.NewFS("/")
	ctx := context.Background()
	silentPID, silentAsked := countingServer(t, false)
	servingPID, servingAsked := countingServer(t, true)
	det := func(pid int) []*Reading {
		return []*Reading{{Target: "pid", Runtime: Python, Source: "maps", PID: pid, Comm: "python3"}}
	}
	// listening is visible to the socket table a moment after the port is printed
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := discoverAll(ctx, fsys, det(silentPID), nil, nil)
		if len(got[0].tried) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	base := silentAsked()
	if base == 0 {
		t.Fatal("the silent server was never asked")
	}

	now := time.Unix(1_800_000_000, 0)
	memo := &DiscoverMemo{Retry: time.Minute, Now: func() time.Time { return now }}
	first := discoverAll(ctx, fsys, det(silentPID), memo, nil)
	second := discoverAll(ctx, fsys, det(silentPID), memo, nil)
	if n := silentAsked() - base; n != 1 {
		t.Errorf("the silent server was asked %d times in two readings with a memo, want 1", n)
	}
	if len(first[0].tried) == 0 || !strings.Contains(second[0].why, "asked again every 1m0s") {
		t.Errorf("first reading tried %v; second says %q", first[0].tried, second[0].why)
	}
	now = now.Add(61 * time.Second)
	discoverAll(ctx, fsys, det(silentPID), memo, nil)
	if n := silentAsked() - base; n != 2 {
		t.Errorf("after Retry the silent server was asked %d times in all, want 2", n)
	}
	discoverAll(ctx, fsys, det(silentPID), nil, nil)
	if n := silentAsked() - base; n != 3 {
		t.Errorf("without a memo the silent server was asked %d times in all, want 3", n)
	}

	for i := range 3 {
		got := discoverAll(ctx, fsys, det(servingPID), memo, nil)
		if got[0].reading == nil || got[0].reading.Runtime != Python {
			t.Fatalf("reading %d of the serving process: %+v", i, got[0])
		}
	}
	if n := servingAsked(); n != 3 {
		t.Errorf("the serving process was asked %d times in three readings, want 3 (its URL, each time)", n)
	}
}
