//go:build linux

package main

// Metrics a process already serves, found without --scrape: real servers
// (a Go program with client_golang, Debian's prometheus and
// prometheus-node-exporter, a Python prometheus_client server) started on
// loopback ports, and check --pid naming each: the runtime is read from the
// process' own /metrics, named by its URL, with the GC count the page
// itself said between the test's own reads before and after; no "register
// client_golang's Go collector" hint for a process that serves it.
//
// Hostile listeners (a Python process answering slowly, dripping, without
// end, with a redirect, with garbage, with a huge page, with a long status
// line; one listening on a
// non-loopback address only; one in another network namespace) must not
// hang check nor make it hold their pages, the last two are never asked,
// and the redirect is never followed.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// promSample returns the sum of a series' samples on a text page.
func promSample(page, name string) (float64, bool) {
	var sum float64
	found := false
	for _, l := range strings.Split(page, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != name && !strings.HasPrefix(f[0], name+"{")) {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

func TestDiscoverServedMetrics(t *testing.T) {
	requireLinuxRoot(t)
	type peer struct {
		name   string
		start  func(t *testing.T, port int) *exec.Cmd
		series string // the GC count on its page
		count  func(r *model.Runtime) *float64
		hint   string // the hint check gave when it did not read the page
	}
	full := func(r *model.Runtime) *float64 { return r.FullCollections }
	young := func(r *model.Runtime) *float64 { return r.YoungCollections }
	peers := []peer{
		{"goservice", func(t *testing.T, port int) *exec.Cmd {
			return exec.Command(goservice(t), "-mode", "healthy", "-listen", "127.0.0.1:"+strconv.Itoa(port))
		}, "go_gc_duration_seconds_count", full, "register client_golang"},
		{"prometheus", func(t *testing.T, port int) *exec.Cmd {
			if _, err := exec.LookPath("prometheus"); err != nil {
				t.Skip("prometheus not installed (scripts/install-test-deps.sh)")
			}
			dir := t.TempDir()
			cfg := filepath.Join(dir, "prometheus.yml")
			if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
				"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
		}, "go_gc_duration_seconds_count", full, "register client_golang"},
		{"node_exporter", func(t *testing.T, port int) *exec.Cmd {
			if _, err := exec.LookPath("prometheus-node-exporter"); err != nil {
				t.Skip("prometheus-node-exporter not installed (scripts/install-test-deps.sh)")
			}
			return exec.Command("prometheus-node-exporter", "--collector.disable-defaults", "--collector.meminfo",
				"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
		}, "go_gc_duration_seconds_count", full, "register client_golang"},
		{"python prometheus_client", func(t *testing.T, port int) *exec.Cmd {
			if exec.Command("/usr/bin/python3", "-c", "import prometheus_client").Run() != nil {
				t.Skip("python3-prometheus-client not installed (scripts/install-test-deps.sh)")
			}
			return exec.Command("/usr/bin/python3", "-c", fmt.Sprintf(`
import gc, time, prometheus_client
prometheus_client.start_http_server(%d, addr="127.0.0.1")
junk = []
while True:
    junk = [[i] for i in range(20000)]  # young collections
    time.sleep(0.05)
`, port))
		}, "python_gc_collections_total", young, "pip install prometheus_client"},
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			port := freePort(t)
			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
			cmd := p.start(t, port)
			cmd.Stdout, cmd.Stderr = nil, nil
			if err := cmd.Start(); err != nil {
				t.Fatalf("starting %s: %v", p.name, err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			pid := cmd.Process.Pid
			var before string
			for deadline := time.Now().Add(30 * time.Second); ; {
				if page, err := httpGet(url); err == nil && strings.Contains(page, p.series) {
					before = page
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s did not serve %s on %s", p.name, p.series, url)
				}
				time.Sleep(100 * time.Millisecond)
			}
			lo, _ := promSample(before, p.series)
			// two readings a second apart: the second finds the same page
			rep := checkBinary(t, "--pid", strconv.Itoa(pid), "--gc-interval", "1s")
			after, err := httpGet(url)
			if err != nil {
				t.Fatal(err)
			}
			hi, _ := promSample(after, p.series)

			for _, n := range rep.Notes {
				if strings.Contains(n.Message, "(pid "+strconv.Itoa(pid)) && strings.Contains(n.Fix, p.hint) {
					t.Errorf("check still hints %q for a process serving its metrics: %s: %s", p.hint, n.Source, n.Message)
				}
			}
			rts := runtimesOfPID(rep, pid)
			if len(rts) != 1 {
				t.Fatalf("pid %d: %d runtimes, want 1: %+v", pid, len(rts), rts)
			}
			r := rts[0]
			if r.Target != url || r.Source != "scrape" {
				t.Errorf("runtime of pid %d read from %s (%s), want its own %s", pid, r.Target, r.Source, url)
			}
			c := p.count(&r)
			if c == nil {
				t.Fatalf("no GC count read from %s: %+v", url, r)
			}
			if *c < lo || *c > hi {
				t.Errorf("GC count %v read from %s, outside the page's own %v before and %v after", *c, url, lo, hi)
			}
			if r.Recent == nil {
				t.Errorf("no rates over check's interval for %s", url)
			}
		})
	}
	// The text report names the URL read.
	t.Run("text", func(t *testing.T) {
		port := freePort(t)
		url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
		cmd := peers[0].start(t, port)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, err := httpGet(url); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("goservice did not answer on %s", url)
			}
		}
		out, _ := exec.Command(binary(t), "check", "--pid", strconv.Itoa(cmd.Process.Pid), "--gc-interval", "0").Output()
		var line string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, url) {
				line = l
			}
		}
		if !strings.Contains(line, "go") || !strings.Contains(line, "pid/"+strconv.Itoa(cmd.Process.Pid)) {
			t.Errorf("the text report has no runtime row naming %s for pid %d:\n%s", url, cmd.Process.Pid, out)
		}
	})
}

// hostileServer is a Python HTTP server answering every request one
// hostile way; it appends each request's path to a file.
const hostileServer = `
import http.server, os, sys, time
mode, host, port, log, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
extra = sys.argv[6] if len(sys.argv) > 6 else ""

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        if mode == "slow":
            time.sleep(60)
            return
        if mode == "status":
            # a reason phrase of 4000 bytes with a terminal escape
            self.send_response(500, "\x1b[2J" + "x" * 4000)
            self.end_headers()
            return
        if mode == "redirect":
            self.send_response(301)
            self.send_header("Location", extra)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        if mode == "huge":
            self.send_header("Content-Length", str(256 << 20))
        self.end_headers()
        try:
            if mode == "drip":
                for _ in range(600):
                    self.wfile.write(b"g")
                    self.wfile.flush()
                    time.sleep(0.1)
            elif mode == "endless":
                chunk = b"python_gc_collections_total{generation=\"0\"} 1\n" * 2000
                while True:
                    self.wfile.write(chunk)
            elif mode == "huge":
                # an application's series: the page is large, the
                # runtime's part of it nothing
                chunk = b"".join(b"app_series_%d 1\n" % i for i in range(50000))
                for _ in range(256 << 20 // len(chunk)):
                    self.wfile.write(chunk)
            elif mode == "garbage":
                # a line longer than any buffer, then a runtime's name
                # with garbage after it
                self.wfile.write(os.urandom(256 << 10).replace(b"\n", b" ") + b"\ngo_gc_duration_seconds_count{{ \xff\xfe\n")
            else:  # "count": a plain page
                self.wfile.write(b"python_gc_collections_total{generation=\"0\"} 1\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

class S(http.server.ThreadingHTTPServer):
    address_family = __import__("socket").AF_INET6 if ":" in host else __import__("socket").AF_INET
    daemon_threads = True

srv = S((host, port), H)
open(ready, "w").close()
srv.serve_forever()
`

type hostile struct {
	mode, host string
	pid        int
	url        string
	log        string
	why        string // why it is not asked (for one that must not be)
}

// startHostile starts the hostile server in mode on host (through wrap, a
// command prefix such as unshare, when not nil) and waits until it listens.
func startHostile(t *testing.T, script, mode, host string, wrap []string, extra ...string) *hostile {
	t.Helper()
	port := freePort(t)
	dir := t.TempDir()
	h := &hostile{mode: mode, host: host, log: filepath.Join(dir, "requests"),
		url: "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/metrics"}
	ready := filepath.Join(dir, "ready")
	args := append(append([]string{}, wrap...), "/usr/bin/python3", script, mode, host, strconv.Itoa(port), h.log, ready)
	cmd := exec.Command(args[0], append(args[1:], extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hostile server %s on %s did not start: %s", mode, host, stderr.String())
		}
	}
	h.pid = cmd.Process.Pid
	if len(wrap) > 0 {
		// the python process is unshare's child (or unshare itself after exec)
		h.pid = pythonPID(t, h.pid)
	}
	return h
}

// pythonPID is pid, or the pid of its only child when pid is not python.
func pythonPID(t *testing.T, pid int) int {
	t.Helper()
	if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); strings.Contains(exe, "python") {
		return pid
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil || len(strings.Fields(string(b))) != 1 {
		t.Fatalf("pid %d: no single child: %v %q", pid, err, b)
	}
	c, _ := strconv.Atoi(strings.Fields(string(b))[0])
	return c
}

func (h *hostile) requests(t *testing.T) int {
	b, err := os.ReadFile(h.log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// nonLoopbackIPv4 is an address of this host's that is not loopback.
func nonLoopbackIPv4() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

func TestDiscoverHostileListeners(t *testing.T) {
	requireLinuxRoot(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	script := filepath.Join(t.TempDir(), "hostile.py")
	if err := os.WriteFile(script, []byte(hostileServer), 0o600); err != nil {
		t.Fatal(err)
	}
	// 127.0.0.2 is another loopback address: the redirect's target, which
	// must never be asked.
	elsewhere := startHostile(t, script, "count", "127.0.0.2", nil)
	var asked []*hostile
	for _, mode := range []string{"slow", "drip", "endless", "huge", "garbage", "status"} {
		asked = append(asked, startHostile(t, script, mode, "127.0.0.1", nil))
	}
	asked = append(asked, startHostile(t, script, "redirect", "::1", nil, strings.Replace(elsewhere.url, "/metrics", "/followed", 1)))
	var unasked []*hostile
	if ip := nonLoopbackIPv4(); ip != "" {
		h := startHostile(t, script, "count", ip, nil)
		h.why = "it listens on no loopback or wildcard address"
		unasked = append(unasked, h)
	} else {
		t.Log("no non-loopback address on this host: the test of a socket listening elsewhere only is left out")
	}
	if _, err := exec.LookPath("unshare"); err == nil {
		h := startHostile(t, script, "count", "127.0.0.1",
			[]string{"unshare", "--net", "sh", "-c", `ip link set lo up && exec "$@"`, "sh"})
		h.why = "it listens in another network namespace"
		unasked = append(unasked, h)
	}
	var pids []string
	for _, h := range append(append([]*hostile{}, asked...), unasked...) {
		pids = append(pids, strconv.Itoa(h.pid))
	}

	run := func(args ...string) (*model.Report, time.Duration, int64) {
		cmd := exec.Command(binary(t), append([]string{"check", "--json", "--gc-interval", "0", "--pid", strings.Join(pids, ",")}, args...)...)
		start := time.Now()
		out, _ := cmd.Output()
		took := time.Since(start)
		var r model.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("check: %v", err)
		}
		return &r, took, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	}
	_, _, baseRSS := run("--discover=false")
	for _, h := range append(append([]*hostile{}, asked...), unasked...) {
		if n := h.requests(t); n != 0 {
			t.Fatalf("--discover=false: %s server (pid %d) asked %d times", h.mode, h.pid, n)
		}
	}
	rep, took, rss := run()
	t.Logf("check took %v, max RSS %d MiB (%d MiB without discovery)", took, rss>>20, baseRSS>>20)
	if took > 15*time.Second {
		t.Errorf("check took %v beside hostile listeners (one sleeps 60 s before answering)", took)
	}
	if rss > baseRSS+48<<20 {
		t.Errorf("check's max RSS %d MiB, %d MiB without discovery: the pages were held", rss>>20, baseRSS>>20)
	}
	// noteOf is what the runtime note says of one process: from its
	// "(pid N;" to the next process' "(pid ".
	noteOf := func(pid int) string {
		for _, n := range rep.Notes {
			_, rest, ok := strings.Cut(n.Message, "(pid "+strconv.Itoa(pid)+";")
			if !ok {
				continue
			}
			if i := strings.Index(rest, " (pid "); i >= 0 {
				rest = rest[:i]
			}
			return rest + "; fix: " + n.Fix
		}
		return ""
	}
	want := map[string]string{"slow": "no answer within", "drip": "did not end within", "endless": "larger than 1 MiB",
		"huge": "larger than 4 MiB", "garbage": "not a Prometheus text page", "redirect": "a redirect, not followed",
		"status": "HTTP 500 Internal Server Error (check the path"}
	for _, h := range asked {
		// at least once: a check that another package's test runs beside
		// this one may ask too
		if n := h.requests(t); n < 1 {
			t.Errorf("%s server (pid %d, %s) was not asked", h.mode, h.pid, h.url)
		}
		note := noteOf(h.pid)
		t.Logf("asked: %s", note)
		if strings.Contains(note, "\x1b") || strings.Contains(note, "xxxxxxxx") {
			t.Errorf("%s server: the note repeats what the server said: %q", h.mode, note)
		}
		if !strings.Contains(note, h.url+" (") || !strings.Contains(note, want[h.mode]) {
			t.Errorf("%s server: the note does not say %s was asked and %q: %q", h.mode, h.url, want[h.mode], note)
		}
		if len(runtimesOfPID(rep, h.pid)) != 1 || runtimesOfPID(rep, h.pid)[0].Source != "maps" {
			t.Errorf("%s server: runtimes %+v, want it detected only", h.mode, runtimesOfPID(rep, h.pid))
		}
	}
	for _, h := range unasked {
		t.Logf("not asked: %s: %s", h.host, noteOf(h.pid))
		if n := h.requests(t); n != 0 {
			t.Errorf("%s server on %s (pid %d) was asked %d times", h.mode, h.host, h.pid, n)
		}
		if note := noteOf(h.pid); !strings.Contains(note, h.why) || !strings.Contains(note, "pass its URL with --scrape") {
			t.Errorf("server on %s (pid %d): the note does not say why it was not asked: %q", h.host, h.pid, note)
		}
	}
	if b, _ := os.ReadFile(elsewhere.log); strings.Contains(string(b), "/followed") {
		t.Errorf("the redirect to %s was followed", strings.Replace(elsewhere.url, "/metrics", "/followed", 1))
	}
}

// record reads what a process serves as check does (one option): a
// Python prometheus_client server holding 256 MiB, so that it is among the
// processes recorded, is stored under its URL, and the recording's
// diagnosis names it.
func TestDiscoverRecord(t *testing.T) {
	requireLinuxRoot(t)
	if exec.Command("/usr/bin/python3", "-c", "import prometheus_client").Run() != nil {
		t.Skip("python3-prometheus-client not installed (scripts/install-test-deps.sh)")
	}
	port := freePort(t)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
	srv := exec.Command("/usr/bin/python3", "-c", fmt.Sprintf(`
import time, prometheus_client
held = bytearray(256 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
prometheus_client.start_http_server(%d, addr="127.0.0.1")
while True:
    junk = [[i] for i in range(20000)]
    time.sleep(0.05)
`, port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := httpGet(url); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not answer on %s", url)
		}
	}
	db := filepath.Join(t.TempDir(), "md.db")
	rec := startRecorder(t, db, time.Second, "--top", "60")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, body := rec.get("/metrics"); metricValue(body, "memdoctor_record_scrapes_stored_total") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recorder stored fewer than 3 samples in a minute:\n%s", rec.logText())
		}
	}
	_ = rec.cmd.Process.Signal(os.Interrupt)
	_, _ = rec.cmd.Process.Wait()
	out, err := exec.Command(binary(t), "diagnose", "--from", db, "--json").Output()
	if err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	var rep model.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	rts := runtimesOfPID(&rep, srv.Process.Pid)
	if len(rts) != 1 || rts[0].Target != url || rts[0].YoungCollections == nil {
		t.Errorf("the recording's runtime of pid %d: %+v, want one read from %s with its collections", srv.Process.Pid, rts, url)
	}
}
