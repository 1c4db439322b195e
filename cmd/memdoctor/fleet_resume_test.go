package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
)

// testResume stops a scan of every host part way and resumes it: the scan
// goes through a loopback proxy to the real Prometheus that lets the
// first three suspects' fetches (8 hosts each) through and holds the
// rest, so that it is stopped with 24 hosts judged whatever the machine's
// speed. Stopped by SIGINT, it says what it kept; a line cut short at the
// end of the file (a crash while writing) is dropped; the same command
// then judges only the others and says how many it resumed, and its
// verdicts are an uninterrupted scan's (want), host by host; a checkpoint
// of another scan is refused, saying how it differs.
func testResume(t *testing.T, promURL, until string, want *fleet.Result) {
	target, err := url.Parse(promURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var fetches atomic.Int32
	var holding atomic.Bool
	holding.Store(true)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/query_range") && holding.Load() {
			body, _ := readAll(r)
			if q, _ := url.ParseQuery(string(body)); strings.Contains(q.Get("query"), `instance=~"`) && fetches.Add(1) > 3 {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		proxy.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln) //nolint:errcheck // ends with Close
	defer hs.Close()
	purl := "http://" + ln.Addr().String()

	cpFile := filepath.Join(t.TempDir(), "scan.checkpoint")
	args := []string{"diagnose", "--prometheus", purl, "--until", until, "--range", "14d", "--all", "--json", "--resume", cpFile}
	cmd := exec.Command(binary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(3 * time.Minute); countLines(cpFile) < 1+24; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the checkpoint has %d lines after 3 minutes, want 25: %s", countLines(cpFile), stderr.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("the scan ended (%v) before it was stopped: %s", err, stderr.String())
		default:
		}
	}
	time.Sleep(300 * time.Millisecond) // no fourth fetch gets through
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Fatal("the stopped scan exited 0")
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the scan did not stop within 30 s of SIGINT")
	}
	if n := countLines(cpFile); n != 1+24 || !strings.Contains(stderr.String(), "24 judged instances are kept in "+cpFile+": the same command with --resume") {
		t.Fatalf("stopped: %d lines in the checkpoint, want 25; stderr: %s", n, stderr.String())
	}
	// A crash while the next line was written.
	f, err := os.OpenFile(cpFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"instance":"host-0`)
	_ = f.Close()

	// Another scan's checkpoint is refused, saying what differs.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--range", "13d"}, "--range 14d, not 13d"},
		{[]string{"--all=false"}, "--all true, not false"},
		{[]string{"--until", "2020-01-01T00:00:00Z"}, "--until " + until + ", not 2020-01-01T00:00:00Z"},
	} {
		a := append(append([]string(nil), args...), c.args...)
		_, errOut, code := runBin(t, a...)
		if code == 0 || !strings.Contains(errOut, "is of another scan ("+c.want) || !strings.Contains(errOut, "run the same command") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming %q", c.args, code, errOut, c.want)
		}
	}
	_, errOut, code := runBin(t, "diagnose", "--prometheus", promURL, "--until", until, "--range", "14d", "--all", "--resume", cpFile)
	if code == 0 || !strings.Contains(errOut, "--prometheus "+purl+", not "+promURL) {
		t.Errorf("another engine: exit %d, stderr %q", code, errOut)
	}

	holding.Store(false)
	close(release)
	out, errOut, code := runBin(t, args...)
	if code != 0 {
		t.Fatalf("resumed scan: exit %d: %s", code, errOut)
	}
	if want := fmt.Sprintf("resumed 24 of %d suspects from %s", want.Suspects, cpFile); !strings.Contains(errOut, want) {
		t.Errorf("resumed scan's stderr lacks %q: %s", want, errOut)
	}
	var got fleet.Result
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Resumed != 24 || len(got.Instances) != len(want.Instances) {
		t.Fatalf("resumed %d, %d instances; want 24 of %d", got.Resumed, len(got.Instances), len(want.Instances))
	}
	// Whole findings and notes, the server's URL aside: the remedies name
	// it, and the resumed scan asked through the proxy.
	verdicts := func(r *fleet.Result) map[string]string {
		m := map[string]string{}
		for _, in := range r.Instances {
			b, _ := json.Marshal([]any{in.Findings, in.Notes, in.Error})
			m[in.Instance] = strings.ReplaceAll(string(b), purl, promURL)
		}
		return m
	}
	g, w := verdicts(&got), verdicts(want)
	differ := 0
	for inst, v := range w {
		if g[inst] != v {
			differ++
			if differ <= 3 {
				t.Errorf("%s: resumed %s\nuninterrupted %s", inst, g[inst], v)
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d hosts differ from an uninterrupted scan", differ, len(w))
	}
	if n := countLines(cpFile); n != 1+len(want.Instances) {
		t.Errorf("the checkpoint holds %d lines after the resumed scan, want %d", n, 1+len(want.Instances))
	}
	t.Logf("stopped with 24 of %d hosts judged; resumed with %d queries", len(want.Instances), got.Cost.Queries)
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	r.Body.Close()
	r.Body = ioNopCloser{bytes.NewReader(b.Bytes())}
	r.ContentLength = int64(b.Len())
	return b.Bytes(), err
}

type ioNopCloser struct{ *bytes.Reader }

func (ioNopCloser) Close() error { return nil }

// countLines counts a file's whole lines (0 when it is not there).
func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		n++
	}
	return n
}
