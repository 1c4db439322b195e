package main

// The recorder against what clients and operators can throw at it: a
// flood of idle connections, a quick restart, and flags out of bounds.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// rssOf returns the resident memory of a process in bytes, or -1.
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return -1
}

// openFDs counts a process' open file descriptors.
func openFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// floodEnv makes the test binary a flood helper (TestFloodHelper): it
// holds its share of the connections, as one process may hold no more than
// its open-file limit.
const floodEnv = "MEMDOCTOR_TEST_FLOOD"

// TestFloodHelper, run by TestRecorderConnectionFlood in a process of its
// own, opens N connections to ADDR (floodEnv=ADDR,N), each sending one
// keep-alive request for /healthz and never reading, and prints "opened
// OPEN FAILED". Then, on a line from standard input, it prints how many of
// them the server has closed, and on the end of its input closes them all.
func TestFloodHelper(t *testing.T) {
	spec := os.Getenv(floodEnv)
	if spec == "" {
		t.Skip("run by TestRecorderConnectionFlood")
	}
	addr, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	var (
		mu     sync.Mutex
		conns  []net.Conn
		failed atomic.Int64
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	deadline := time.Now().Add(60 * time.Second)
	for range 4 {
		wg.Go(func() {
			d := net.Dialer{Timeout: 2 * time.Second}
			for next.Add(1) <= int64(n) && time.Now().Before(deadline) {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("opened %d %d\n", len(conns), failed.Load())
	in := bufio.NewScanner(os.Stdin)
	if in.Scan() {
		closed := 0
		buf := make([]byte, 512)
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
			for {
				if _, err := c.Read(buf); err != nil {
					if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
						closed++
					}
					break
				}
			}
		}
		fmt.Printf("closed %d\n", closed)
	}
	for in.Scan() {
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

// flooder is a running TestFloodHelper.
type flooder struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startFlooder(t *testing.T, addr string, n int) *flooder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), floodEnv+"="+addr+","+strconv.Itoa(n))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return &flooder{cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

// expect reads the helper's output up to a line "word A [B]".
func (f *flooder) expect(t *testing.T, word string) (a, b int) {
	t.Helper()
	for f.out.Scan() {
		if fs := strings.Fields(f.out.Text()); len(fs) >= 2 && fs[0] == word {
			a, _ = strconv.Atoi(fs[1])
			if len(fs) > 2 {
				b, _ = strconv.Atoi(fs[2])
			}
			return a, b
		}
	}
	t.Fatalf("the flood helper ended without saying %q", word)
	return 0, 0
}

// TestRecorderConnectionFlood opens 20,000 connections (from two helper
// processes, 10,000 each) to a recorder whose open-file limit is 4096, each
// asking for /healthz once and then staying open, idle. The recorder loses
// no sample, stays small, keeps answering /metrics, holds no more
// connections than its limit, and closes the idle ones to make room.
func TestRecorderConnectionFlood(t *testing.T) {
	skipShort(t)
	requireLinuxRoot(t)
	// A 2 s grid: a sample that ends more than half an interval late skips
	// its slot by design (nextSlot), which a 1 s grid on a host at load 8
	// does without any flood.
	const flood, helpers, recorderFiles, interval = 20000, 2, 4096, 2 * time.Second
	db := filepath.Join(t.TempDir(), "md.db")
	addr := freeAddr(t)
	logf, err := os.CreateTemp(t.TempDir(), "record-*.log")
	if err != nil {
		t.Fatal(err)
	}
	// The recorder's own limit below the flood, as on a host with a
	// default limit: the connections must not take what collection needs.
	cmd := exec.Command("sh", "-c", `ulimit -n `+strconv.Itoa(recorderFiles)+` && exec "$0" "$@"`,
		binary(t), "record", "--db", db, "--interval", interval.String(), "--listen", addr, "--top", "10", "--findings-every", "0")
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	r := &recorder{cmd: cmd, addr: addr, log: logf}
	r.waitHealthy(t, 20*time.Second)
	pid := cmd.Process.Pid
	time.Sleep(3 * time.Second)
	rssBefore := rssOf(pid)

	var peakRSS, peakFDs atomic.Int64
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() { // the recorder's memory and descriptors while flooded
		defer close(watched)
		for {
			if v := rssOf(pid); v > peakRSS.Load() {
				peakRSS.Store(v)
			}
			if v := int64(openFDs(pid)); v > peakFDs.Load() {
				peakFDs.Store(v)
			}
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	floodStart := time.Now()
	var fl []*flooder
	for range helpers {
		fl = append(fl, startFlooder(t, addr, flood/helpers))
	}
	opened, failed := 0, 0
	for _, f := range fl {
		o, e := f.expect(t, "opened")
		opened, failed = opened+o, failed+e
	}
	floodTook := time.Since(floodStart)

	// While every one of them is still open on the clients' side:
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	limit := -1.0
	if resp, err := client.Get("http://" + addr + "/metrics"); err != nil {
		t.Errorf("/metrics under the flood: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		body := string(b)
		for l := range strings.Lines(body) {
			if strings.HasPrefix(l, "memdoctor_record_http_connections_closed_total{") {
				t.Logf("under the flood: %s", strings.TrimSpace(l))
			}
		}
		held := metricValue(body, "memdoctor_record_http_connections")
		limit = metricValue(body, "memdoctor_record_http_connections_limit")
		if resp.StatusCode != 200 || limit <= 0 || held < 0 || held > limit {
			t.Errorf("/metrics under the flood: %d, %v connections held, limit %v", resp.StatusCode, held, limit)
		}
	}
	time.Sleep(2 * interval) // a few more samples with the flood open
	close(stopWatch)
	<-watched

	// The connections the recorder closed to make room: their reads end.
	closed := 0
	for _, f := range fl {
		_, _ = io.WriteString(f.in, "check\n")
		c, _ := f.expect(t, "closed")
		closed += c
	}
	for _, f := range fl {
		_ = f.in.Close()
	}
	time.Sleep(2 * time.Second)
	rssAfter := rssOf(pid)
	r.stop(t)

	log := r.logText()
	ts := storedTimes(t, db)
	lost := 0
	for i := 1; i < len(ts); i++ {
		if gap := ts[i] - ts[i-1]; gap > interval.Milliseconds() {
			lost += int(gap/interval.Milliseconds()) - 1
		}
	}
	t.Logf("flood: %d of %d connections opened in %v (%d failed), %d closed by the recorder to make room; limit %v",
		opened, flood, floodTook.Round(time.Millisecond), failed, closed, limit)
	t.Logf("recorder: RSS %.1f MB before, %.1f MB peak during, %.1f MB after; at most %d descriptors open (limit %d); %d samples stored, %d lost",
		float64(rssBefore)/1e6, float64(peakRSS.Load())/1e6, float64(rssAfter)/1e6, peakFDs.Load(), recorderFiles, len(ts), lost)
	if opened < flood {
		t.Errorf("only %d of %d connections could be opened: the recorder stopped accepting", opened, flood)
	}
	if lost > 0 || strings.Contains(log, "too many open files") || strings.Contains(log, "collection failed") {
		t.Errorf("%d samples lost under the flood:\n%s", lost, firstLines(log, 12))
	}
	if limit < 0 {
		return
	}
	if closed < (opened-int(limit))*99/100 {
		t.Errorf("only %d of %d idle connections were closed by the recorder (limit %v)", closed, opened, limit)
	}
	if peakFDs.Load() > int64(limit)+200 {
		t.Errorf("the recorder held %d descriptors under the flood (connection limit %v)", peakFDs.Load(), limit)
	}
	if grow := peakRSS.Load() - rssBefore; grow > 32<<20 {
		t.Errorf("the flood grew the recorder by %.1f MB (%.1f → %.1f MB)", float64(grow)/1e6, float64(rssBefore)/1e6, float64(peakRSS.Load())/1e6)
	}
}

// TestRecorderQuickRestart stops a recorder and starts another on the same
// store within the same interval slot: the second keeps its first sample
// and does not say the clock went back.
func TestRecorderQuickRestart(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	const interval = 10 * time.Second
	for attempt := 0; attempt < 3; attempt++ {
		db := filepath.Join(t.TempDir(), "md.db")
		first := startRecorder(t, db, interval)
		first.stop(t)
		before := storedTimes(t, db)
		if len(before) == 0 {
			t.Fatalf("the first recorder stored nothing:\n%s", first.logText())
		}
		last := time.UnixMilli(before[len(before)-1])
		if !time.Now().Truncate(interval).Equal(last) || time.Until(last.Add(interval)) < 3*time.Second {
			// The slot ended meanwhile (not a quick restart), or ends before
			// a second recorder could start, sample and stop (it would
			// store the next slot too): try again.
			continue
		}
		second := startRecorder(t, db, interval)
		second.stop(t)
		after := storedTimes(t, db)
		if strings.Contains(second.logText(), "clock went back") {
			t.Errorf("a quick restart says the clock went back:\n%s", second.logText())
		}
		if len(after) != len(before)+1 || after[len(after)-1] <= before[len(before)-1] {
			t.Errorf("the restarted recorder's first sample was not stored: %v then %v\n%s", before, after, second.logText())
		}
		return
	}
	t.Skip("could not restart within one 10 s slot three times")
}

// TestRecordFlagBounds: an interval below 1 s needs --force-interval, and
// --top must not be negative (record, check, capture).
func TestRecordFlagBounds(t *testing.T) {
	db := filepath.Join(t.TempDir(), "md.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--db", db, "--listen", "", "--interval", "1ns"}, "--force-interval"},
		{[]string{"record", "--db", db, "--listen", "", "--interval", "500ms"}, "use 1s or more"},
		{[]string{"record", "--db", db, "--listen", "", "--interval", "0s", "--force-interval"}, "positive"},
		{[]string{"record", "--db", db, "--listen", "", "--top", "-1"}, "--top -1: want 0 or more"},
		{[]string{"capture", "-o", filepath.Join(t.TempDir(), "c.txtar"), "--top", "-1"}, "--top -1: want 0 or more"},
		{[]string{"check", "--top", "-1"}, "--top -1: want 0 or more"},
		{[]string{"record", "--db", db, "--listen", "localhost"}, "want HOST:PORT"},
	} {
		// A separate process with a deadline: a recorder that accepted the
		// flags would run until killed.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, binary(t), c.args...).CombinedOutput()
		late := ctx.Err() // before cancel, which sets it in any case
		cancel()
		if err == nil || late != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: %v (deadline: %v), want an error saying %q:\n%s", c.args, err, late, c.want, out)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused record created the store")
	}
}

// TestRecordListenBarePort: --listen PORT serves on 127.0.0.1:PORT; a port
// in use says so, and only then hints at another recorder.
func TestRecordListenBarePort(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	db := filepath.Join(t.TempDir(), "md.db")
	logf, err := os.CreateTemp(t.TempDir(), "record-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "record", "--db", db, "--interval", "1s", "--listen", port, "--top", "3")
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	r := &recorder{cmd: cmd, addr: "127.0.0.1:" + port, log: logf}
	r.waitHealthy(t, 20*time.Second)
	if !strings.Contains(r.logText(), "http://127.0.0.1:"+port+"/") {
		t.Errorf("the log does not say where it serves:\n%s", r.logText())
	}
	// The same port again: taken, and said so.
	out, err := exec.Command(binary(t), "record", "--db", filepath.Join(t.TempDir(), "other.db"), "--listen", port).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "127.0.0.1:"+port) || !strings.Contains(string(out), "the port is taken") {
		t.Errorf("a taken port: %v:\n%s", err, out)
	}
	r.stop(t)
}

func firstLines(s string, n int) string {
	var out []string
	for l := range strings.Lines(s) {
		if len(out) == n {
			out = append(out, "…\n")
			break
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
