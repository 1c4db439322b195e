package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promAPI queries a Prometheus' HTTP API.
type promAPI struct{ base string }

type promSeries struct {
	Metric map[string]string `json:"metric"`
}

// query runs an instant query, or a range query over the last minute when
// rng; it returns the series, or Prometheus' error (a query that does
// not parse is "bad_data").
func (p promAPI) query(expr string, rng bool) ([]promSeries, error) {
	v := url.Values{"query": {expr}}
	endpoint := "/api/v1/query"
	if rng {
		now := time.Now()
		endpoint = "/api/v1/query_range"
		v.Set("start", strconv.FormatInt(now.Add(-time.Minute).Unix(), 10))
		v.Set("end", strconv.FormatInt(now.Unix(), 10))
		v.Set("step", "2")
	}
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.PostForm(p.base+endpoint, v)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	var ans struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if ans.Status != "success" {
		return nil, fmt.Errorf("%s: %s", ans.ErrorType, ans.Error)
	}
	return ans.Data.Result, nil
}

// dashQuery is one query of the dashboard as checked: where it is, and
// the PromQL after the variables' substitution.
type dashQuery struct {
	where string
	expr  string
	rng   bool
}

// queryChecker checks one query against the Prometheus: it parses, every
// metric name is in memdoctor's catalog, and it returns data (the series
// of the test's own cgroup where it is about cgroups).
type queryChecker struct {
	prom    promAPI
	catalog seriesCatalog
	cgroup  string
}

// check returns what is wrong with q (nil when nothing).
func (c queryChecker) check(q dashQuery) (problems []string) {
	res, err := c.prom.query(q.expr, q.rng)
	if err != nil {
		return []string{fmt.Sprintf("Prometheus refuses it: %v", err)}
	}
	names := metricNames(q.expr)
	if len(names) == 0 {
		problems = append(problems, "it names no series")
	}
	for _, n := range names {
		if c.catalog.has(n) {
			continue
		}
		problems = append(problems, fmt.Sprintf("series %s is not in memdoctor's catalog (docs/metrics.md, internal/sample/catalog.go)", n))
	}
	if len(res) == 0 {
		return append(problems, "it returns no data")
	}
	// A per-cgroup query returns the test's cgroup (a top-k may leave it
	// out on a host with many cgroups nearer their limit).
	if strings.Contains(q.expr, "memdoctor_cgroup_") && !strings.Contains(q.expr, "topk(") && !strings.Contains(q.expr, "bottomk(") &&
		!slices.ContainsFunc(res, func(s promSeries) bool { return s.Metric["cgroup"] == c.cgroup }) {
		problems = append(problems, fmt.Sprintf("no series of the test's cgroup %s among %d", c.cgroup, len(res)))
	}
	return problems
}

// substitute renders a query as Grafana sends it: each $variable replaced
// by its value, regular-expression-escaped for the =~ the dashboard uses
// (Grafana doubles the backslashes inside PromQL's string).
func substitute(expr string, values map[string]string) string {
	return regexp.MustCompile(`\$\{?([a-zA-Z_]+)\}?`).ReplaceAllStringFunc(expr, func(m string) string {
		name := strings.Trim(m, "${}")
		v, ok := values[name]
		if !ok {
			return m
		}
		return v
	})
}

func regexValue(v string) string { return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`) }

// labelValues splits a variable's label_values(SELECTOR, LABEL).
func labelValues(q string) (selector, label string, ok bool) {
	m := regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`).FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Every query of the dashboard, with its variables set to real values,
// against Debian's Prometheus scraping a real recorder on loopback that
// records a memory cgroup the test made, holding a process near its
// limit: each query parses, names only series memdoctor's catalog has,
// and returns data (the per-cgroup ones, the test's cgroup).
func TestGrafanaQueriesOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memdoctor and runs a recorder and Prometheus for about 15 s")
	}
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes a memory cgroup")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (scripts/install-test-deps.sh installs it)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: it is the process that fills the test's cgroup")
	}
	d, _ := loadDashboard(t)
	catalog := loadSeriesCatalog(t)
	cg, usageFile, limitFile := testMemoryCgroup(t, 128<<20)
	start := time.Now()
	bin := filepath.Join(t.TempDir(), "memdoctor")
	build := exec.Command("go", "build", "-o", bin, "../cmd/memdoctor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building memdoctor: %v\n%s", err, out)
	}
	built := time.Now()
	// Filled after the build, so that its growth (what the time to the
	// OOM kill is computed from) is recorded.
	fillCgroup(t, cg, usageFile, limitFile)
	recAddr := loopbackAddr(t)
	recLog := filepath.Join(t.TempDir(), "record.log")
	startLogged(t, recLog, bin, "record", "--db", filepath.Join(t.TempDir(), "md.db"), "--interval", "1s",
		"--listen", recAddr, "--top", "10", "--findings-every", "2s")

	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: memdoctor
    static_configs:
      - targets: ['%s']
`, recAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	web := loopbackAddr(t)
	promLog := filepath.Join(dir, "prometheus.log")
	startLogged(t, promLog, promBin, "--config.file", cfg, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", web)
	prom := promAPI{"http://" + web}

	// The recorder scraped, its findings evaluated (the test's cgroup is
	// near its limit: cgroup_near_limit), the cgroup recorded, and a few
	// scrapes behind them for the range queries.
	sel := fmt.Sprintf(`{job="memdoctor", instance=%q}`, recAddr)
	ready := []string{"up" + sel + " == 1", "memdoctor_finding" + sel,
		fmt.Sprintf(`memdoctor_cgroup_memory_limit_bytes{instance=%q, cgroup=%q}`, recAddr, cg),
		fmt.Sprintf(`count_over_time(node_memory_MemTotal_bytes%s[1m]) >= 5`, sel)}
	for _, n := range []string{"memdoctor_cgroup_memory_unreclaimable_bytes", "memdoctor_cgroup_memory_oom_distance_bytes", "memdoctor_cgroup_memory_oom_eta_seconds"} {
		ready = append(ready, fmt.Sprintf(`%s{instance=%q, cgroup=%q}`, n, recAddr, cg))
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		missing := ""
		for _, q := range ready {
			if res, err := prom.query(q, false); err != nil || len(res) == 0 {
				missing = q
				break
			}
		}
		if missing == "" {
			t.Logf("memdoctor built in %v; the recorder scraped, its findings evaluated and the test's cgroup recorded %v later",
				built.Sub(start).Round(time.Second), time.Since(built).Round(time.Second))
			break
		}
		if time.Now().After(deadline) {
			rl, _ := os.ReadFile(recLog)
			pl, _ := os.ReadFile(promLog)
			t.Fatalf("within 2 min Prometheus has no %s\nrecorder:\n%s\nprometheus:\n%.3000s", missing, rl, pl)
		}
	}

	// The variables as a user sets them: the node the recorder runs on
	// (the only one here), every namespace and pod (the test's cgroup
	// belongs to no pod; All is .* and matches a missing label).
	values := map[string]string{"instance": regexValue(recAddr)}
	for _, v := range d.Templating.List {
		if v.Name != "instance" && v.Name != "datasource" {
			values[v.Name] = v.AllValue
		}
	}
	var queries []dashQuery
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel, label, ok := labelValues(v.varQuery())
		if !ok {
			t.Errorf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, v.varQuery())
			continue
		}
		// The values are those of the label on the selector's series. No
		// pod runs here: for namespace and pod the selector's series are
		// required, not the label.
		q := fmt.Sprintf("count by (%s) (%s)", label, sel)
		if v.Name == "namespace" || v.Name == "pod" {
			q = sel
		}
		queries = append(queries, dashQuery{where: "variable " + v.Name, expr: substitute(q, values)})
	}
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			queries = append(queries, dashQuery{where: fmt.Sprintf("panel %q query %s", p.Title, tg.RefID),
				expr: substitute(tg.Expr, values), rng: !tg.Instant})
		}
	}
	checker := queryChecker{prom: prom, catalog: catalog, cgroup: cg}
	for _, q := range queries {
		if strings.Contains(q.expr, "$") {
			t.Errorf("%s: a variable left unset: %s", q.where, q.expr)
			continue
		}
		problems := checker.check(q)
		for _, p := range problems {
			t.Errorf("%s: %s\n\t%s", q.where, p, q.expr)
		}
	}
	t.Logf("%d queries checked against %s", len(queries), promBin)

	// The check can fail: a renamed series, a query that does not parse.
	for _, broken := range []string{
		`node_memory_MemAvailable{instance=~"` + values["instance"] + `"}`,
		`sum by (instance (memdoctor_finding)`,
		`memdoctor_cgroup_memory_limit_bytes{cgroup="/no-such-cgroup"}`,
	} {
		if problems := checker.check(dashQuery{where: "broken", expr: broken}); len(problems) == 0 {
			t.Errorf("the check passes a broken query: %s", broken)
		}
	}
}

// testMemoryCgroup makes a memory cgroup with a limit for the test (v1,
// or v2 where the memory controller is enabled below the root) and
// removes it at the end; it returns its path as memdoctor labels it and
// its usage and limit files.
func testMemoryCgroup(t *testing.T, limit int64) (cg, usage, limitFile string) {
	t.Helper()
	name := fmt.Sprintf("memdoctor-grafana-%d-%d", os.Getpid(), time.Now().UnixNano())
	var dir string
	switch {
	case fileExists("/sys/fs/cgroup/memory/memory.usage_in_bytes"):
		dir = filepath.Join("/sys/fs/cgroup/memory", name)
		usage, limitFile = "memory.usage_in_bytes", "memory.limit_in_bytes"
	case strings.Contains(readString("/sys/fs/cgroup/cgroup.subtree_control"), "memory"):
		dir = filepath.Join("/sys/fs/cgroup", name)
		usage, limitFile = "memory.current", "memory.max"
	default:
		t.Skip("no writable memory cgroup controller (v1 memory, or v2 with memory in the root's subtree_control)")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		for _, f := range strings.Fields(readString(filepath.Join(dir, "cgroup.procs"))) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		for try := 0; try < 100; try++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("could not remove %s", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	return "/" + name, filepath.Join(dir, usage), filepath.Join(dir, limitFile)
}

// fillCgroup runs a process in the cgroup that allocates anonymous memory
// until the cgroup's usage is 93 % of its limit (its working set then
// makes cgroup_near_limit fire), then grows by 128 KiB a second up to
// 97 % (about 40 s), and returns once it reached 93 %.
func fillCgroup(t *testing.T, cg, usageFile, limitFile string) {
	t.Helper()
	script := `import mmap, sys, time
usage, limit = sys.argv[1], int(open(sys.argv[2]).read())
held = []
def used(): return int(open(usage).read())
def grow(n):
    m = mmap.mmap(-1, n)
    m.write(b"\x01" * n)
    held.append(m)
while used() < limit * 0.93:
    grow(1 << 20)
print("full", flush=True)
while True:
    time.sleep(1)
    if used() < limit * 0.97:
        grow(128 << 10)
`
	procs := filepath.Join(filepath.Dir(usageFile), "cgroup.procs")
	// The shell joins the cgroup before python starts: every byte it
	// allocates is charged there.
	cmd := exec.Command("sh", "-c", `echo $$ > "$1" && exec python3 -c "$2" "$3" "$4"`, "sh", procs, script, usageFile, limitFile)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 5)
		_, err := io.ReadFull(out, buf)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the process filling %s stopped: %v", cg, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the process filling %s did not reach 93 %% of its limit within a minute (usage %s)", cg, readString(usageFile))
	}
}

// startLogged starts a program with its output in logFile and stops it at
// the end of the test.
func startLogged(t *testing.T, logFile, bin string, args ...string) {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		f.Close()
	})
}

// loopbackAddr returns a free port on 127.0.0.1.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	_ = l.Close()
	return a
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func readString(p string) string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }
