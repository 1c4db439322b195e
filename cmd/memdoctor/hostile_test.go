package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Inputs that never end or never start: a FIFO nobody writes to and a copy
// of /dev/zero (made in the test's own directory), given as a capture, a
// recording, a lint file, or linked into a --root tree. Each is refused at
// once with the path named; before, each blocked forever or read until
// memory ran out.
func TestEndlessInputsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := ""
	if os.Geteuid() == 0 {
		z := filepath.Join(dir, "zero")
		if err := unix.Mknod(z, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err == nil {
			zero = z
		}
	}
	cases := [][]string{
		{"check", "--capture", fifo},
		{"diagnose", "--from", fifo},
		{"lint", fifo},
	}
	if zero != "" {
		root := filepath.Join(dir, "root")
		if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(zero, filepath.Join(root, "proc", "meminfo")); err != nil {
			t.Fatal(err)
		}
		cases = append(cases,
			[]string{"check", "--capture", zero},
			[]string{"lint", zero},
			[]string{"check", "--root", root},
		)
	} else {
		t.Log("not root: the /dev/zero copy cases are not run")
	}
	for _, args := range cases {
		start := time.Now()
		_, errOut, code := runCLI(t, args...)
		took := time.Since(start)
		if code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		if !strings.Contains(errOut, "FIFO") && !strings.Contains(errOut, "character device") {
			t.Errorf("%v: message does not say what the input is: %q", args, errOut)
		}
		if took > 10*time.Second {
			t.Errorf("%v: took %s", args, took)
		}
	}
}

// --prometheus-retries 0 sends each query once (it meant the default, 3,
// before); a negative count is refused.
func TestPrometheusRetriesZero(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		// Only the query API's requests count: a check running beside
		// the test finds this listener among the host's services and
		// scrapes its /metrics.
		if strings.HasPrefix(r.URL.Path, "/api/") {
			mu.Lock()
			seen[r.URL.Path+"?"+r.Form.Encode()]++
			mu.Unlock()
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, c := range []struct {
		retries string
		sends   int
	}{{"0", 1}, {"2", 3}} {
		mu.Lock()
		clear(seen)
		mu.Unlock()
		_, errOut, code := runCLI(t, "diagnose", "--prometheus", srv.URL, "--prometheus-retries", c.retries)
		if code == 0 {
			t.Errorf("retries %s: exit 0 against a server answering 503", c.retries)
		}
		mu.Lock()
		if len(seen) == 0 {
			t.Errorf("retries %s: no request reached the server: %s", c.retries, errOut)
		}
		for q, n := range seen {
			if n != c.sends {
				t.Errorf("retries %s: %q sent %d times, want %d", c.retries, q, n, c.sends)
			}
		}
		mu.Unlock()
	}
	if _, errOut, code := runCLI(t, "diagnose", "--prometheus", srv.URL, "--prometheus-retries", "-1"); code == 0 || !strings.Contains(errOut, "give 0 (no retry) or more") {
		t.Errorf("retries -1: exit %d, %q", code, errOut)
	}
}

// A --scrape URL's password and token are used to read the service and
// never stored or shown: not in check's text or JSON, not in the
// recorder's /metrics, its store, its export or its report.
func TestScrapeCredentialsRedacted(t *testing.T) {
	const secret = "hunter2"
	page, err := os.ReadFile("../../internal/runtimes/testdata/pages/go-client_golang-1.25.prom")
	if err != nil {
		t.Fatal(err)
	}
	var authed sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "ops" || p != secret || r.URL.Query().Get("token") != secret {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		authed.Store("yes", true)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	scrape := strings.Replace(srv.URL, "http://", "http://ops:"+secret+"@", 1) + "/metrics?token=" + secret
	for _, args := range [][]string{
		{"check", "--gc-interval", "0", "--scrape", scrape},
		{"check", "--json", "--gc-interval", "0", "--scrape", scrape},
	} {
		out, errOut, code := runCLI(t, args...)
		if code != 0 && code != 1 && code != 2 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%v shows the secret", args[:2])
		}
		if !strings.Contains(out, "xxxxx") {
			t.Errorf("%v does not name the redacted target", args[:2])
		}
	}
	if _, ok := authed.Load("yes"); !ok {
		t.Fatal("the service was never read with its credentials")
	}
	// A refused scrape is named without its secrets too.
	bad := strings.Replace(scrape, secret+"@", "wrong@", 1)
	out, errOut, _ := runCLI(t, "check", "--gc-interval", "0", "--scrape", bad)
	if strings.Contains(out+errOut, secret) || !strings.Contains(out, "HTTP 401") {
		t.Errorf("failed scrape: secret shown or failure not noted:\n%s", out)
	}

	db := filepath.Join(t.TempDir(), "md.db")
	r := startRecorder(t, db, time.Second, "--scrape", scrape)
	time.Sleep(2500 * time.Millisecond)
	_, metrics := r.get("/metrics")
	r.stop(t)
	if strings.Contains(metrics, secret) || !strings.Contains(metrics, "xxxxx") {
		t.Errorf("/metrics: secret shown or the scrape target missing")
	}
	exp, errOut, code := runCLI(t, "export", "--from", db, "-o", "-")
	if code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	raw, _ := os.ReadFile(db)
	if strings.Contains(exp, secret) || bytes.Contains(raw, []byte(secret)) {
		t.Errorf("the store or its export holds the secret")
	}
}

// Credentials for --scrape come from files (a command line is readable by
// every user of the host): a bearer token, or a user with a password file.
func TestScrapeCredentialsFromFiles(t *testing.T) {
	const secret = "s3cr3t-token-value"
	page, err := os.ReadFile("../../internal/runtimes/testdata/pages/go-client_golang-1.25.prom")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, basic := r.BasicAuth()
		if r.Header.Get("Authorization") != "Bearer "+secret && (!basic || u != "ops" || p != secret) {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/metrics"
	for _, auth := range [][]string{
		{"--scrape-token-file", file},
		{"--scrape-user", "ops", "--scrape-password-file", file},
		nil,
	} {
		out, errOut, _ := runCLI(t, append([]string{"check", "--gc-interval", "0", "--scrape", url}, auth...)...)
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%v: the secret is shown", auth)
		}
		refused := strings.Contains(out, "HTTP 401")
		if refused != (auth == nil) {
			t.Errorf("%v: scrape refused=%v\n%s%s", auth, refused, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scrape", url, "--scrape-user", "ops"}, "needs --scrape-password-file"},
		{[]string{"--scrape", url, "--scrape-password-file", file}, "needs --scrape-user"},
		{[]string{"--scrape", url, "--scrape-token-file", file, "--scrape-user", "ops", "--scrape-password-file", file}, "one kind of credentials"},
		{[]string{"--scrape", url, "--scrape-token-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"--scrape-token-file", file}, "without --scrape URL"},
	} {
		_, errOut, code := runCLI(t, append([]string{"check"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut, c.want)
		}
	}
}

// Secrets in the other places a scrape URL holds them: a query parameter
// named pwd, a path's matrix parameter (;token=), a user name standing
// alone, and the query of a URL nothing answers (net/http names it in its
// error). None is shown in check's text or JSON, nor in the recorder's
// /metrics, live page, log, store or export; the service is read with
// them.
func TestScrapeSecretFormsRedacted(t *testing.T) {
	const secret = "Zq8wK3pV"
	page, err := os.ReadFile("../../internal/runtimes/testdata/pages/go-client_golang-1.25.prom")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	served := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _, _ := r.BasicAuth()
		var form string
		switch {
		case r.URL.Path == "/metrics" && r.URL.Query().Get("pwd") == secret:
			form = "pwd"
		case r.URL.Path == "/metrics;token="+secret:
			form = "matrix"
		case u == secret:
			form = "user"
		default:
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		served[form] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	closed := freeAddr(t) // nothing listens there: the request fails in net/http
	scrapes := []string{
		srv.URL + "/metrics?pwd=" + secret,
		srv.URL + "/metrics;token=" + secret,
		strings.Replace(srv.URL, "http://", "http://"+secret+"@", 1) + "/metrics",
		"http://" + closed + "/metrics;jsessionid=" + secret + "?format=text&apikey=" + secret,
	}
	var args []string
	for _, s := range scrapes {
		args = append(args, "--scrape", s)
	}
	for _, mode := range [][]string{{"check"}, {"check", "--json"}} {
		out, errOut, code := runCLI(t, append(append(mode, "--gc-interval", "0"), args...)...)
		if code != 0 && code != 1 && code != 2 {
			t.Fatalf("%v: exit %d: %s", mode, code, errOut)
		}
		if strings.Contains(out+errOut, secret) {
			for _, l := range strings.Split(out+errOut, "\n") {
				if strings.Contains(l, secret) {
					t.Errorf("%v shows the secret: %s", mode, strings.TrimSpace(l))
				}
			}
		}
		if !strings.Contains(out, closed) || !strings.Contains(out, "xxxxx") {
			t.Errorf("%v does not name the failed scrape, or no redacted target", mode)
		}
	}
	for _, form := range []string{"pwd", "matrix", "user"} {
		if !served[form] {
			t.Errorf("the service was never read with the secret as %s", form)
		}
	}

	db := filepath.Join(t.TempDir(), "md.db")
	r := startRecorder(t, db, time.Second, args...)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if _, m := r.get("/metrics"); metricValue(m, "memdoctor_record_scrapes_stored_total") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorder stored fewer than 3 samples in 20 s")
		}
	}
	code, live := r.get("/")
	if code != http.StatusOK {
		t.Errorf("GET /: %d %s", code, live)
	}
	_, metrics := r.get("/metrics")
	r.stop(t)
	exp, errOut, code := runCLI(t, "export", "--from", db, "-o", "-")
	if code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	raw, _ := os.ReadFile(db)
	for what, text := range map[string]string{"/metrics": metrics, "the live page": live, "the log": r.logText(),
		"the export": exp, "the store": string(raw)} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the secret", what)
		}
	}
	if !strings.Contains(metrics, "xxxxx") || !strings.Contains(live, "xxxxx") {
		t.Errorf("/metrics or the live page does not name the redacted targets")
	}
}
