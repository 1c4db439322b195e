package main

// Kubernetes containers through Prometheus: a fleet's node_exporter
// history plus cadvisor and kube-state-metrics series of dozens of
// containers (OOM-killed, near their limit on RSS, near it on page cache
// only, healthy), backfilled into a real Prometheus; diagnose --prometheus
// must name exactly the OOM-killed and near-limit containers.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/fleettest"
)

func TestFleetKubernetesContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills a fleet into Prometheus")
	}
	dir := t.TempDir()
	end := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	m := backfilledFleet(t, dir, fleettest.Options{Hosts: 6, Days: 2, Interval: 5 * time.Minute, End: end, Seed: 5})
	plain := []string{m.Hosts[4].Instance, m.Hosts[5].Instance}
	ctrs, err := fleettest.WriteContainers(filepath.Join(dir, "containers.om"), fleettest.ContainerOptions{
		Hosts: m.Hosts, Plain: plain, PerHost: 10, From: m.Start, To: m.End, Interval: 5 * time.Minute,
		KillAfter: m.End.Add(-20 * time.Hour), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	promtool, _ := exec.LookPath("promtool") // backfilledFleet skipped without it
	// promtool reads its whole input once per two-hour block: the 144 MB
	// file took it 297 s in one piece on a loaded host, so it is backfilled
	// one two-hour block at a time (the same samples).
	backfill(t, promtool, filepath.Join(dir, "tsdb"), splitOpenMetrics(t, filepath.Join(dir, "containers.om"), 2*time.Hour))
	srv := startPrometheus(t, dir, "")

	// What must fire, per rule: "instance container-key".
	want := map[string][]string{}
	kinds := map[string]int{}
	for _, c := range ctrs {
		kinds[c.Kind]++
		switch c.Kind {
		case fleettest.NearAnon:
			want["cgroup_near_limit"] = append(want["cgroup_near_limit"], c.Instance+" "+c.Key())
		case fleettest.OOMRestarted, fleettest.OOMChild:
			want["cgroup_oom_kills"] = append(want["cgroup_oom_kills"], c.Instance+" "+c.Key())
		}
	}
	for _, k := range []string{fleettest.Healthy, fleettest.CacheHeavy, fleettest.NearAnon, fleettest.OOMRestarted, fleettest.OOMChild} {
		if kinds[k] < 4 {
			t.Fatalf("the fleet has %d %s containers; want several of each kind: %v", kinds[k], k, kinds)
		}
	}
	for _, v := range want {
		sort.Strings(v)
	}

	diag := func(t *testing.T, extra ...string) *fleet.Result {
		t.Helper()
		args := append([]string{"diagnose", "--prometheus", srv.url, "--until", m.End.Format(time.RFC3339), "--range", "1d", "--json"}, extra...)
		out, errOut, code := runBin(t, args...)
		if code != 0 {
			t.Fatalf("diagnose exited %d: %s", code, errOut)
		}
		var res fleet.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return &res
	}
	got := func(t *testing.T, res *fleet.Result) map[string][]string {
		t.Helper()
		out := map[string][]string{}
		for _, in := range res.Instances {
			for _, f := range in.Findings {
				if f.ID != "cgroup_near_limit" && f.ID != "cgroup_oom_kills" {
					continue
				}
				key := strings.TrimPrefix(f.Subject, "cgroup ")
				out[f.ID] = append(out[f.ID], in.Instance+" "+key)
				// Named as users know it: pod, container and namespace.
				parts := strings.Split(key, "/")
				owner := ""
				for _, e := range f.Evidence {
					if e.Name == "owner" {
						owner = e.Text
					}
				}
				if len(parts) != 3 || owner != key {
					t.Errorf("%s on %s: subject %q, owner %q: want namespace/pod/container", f.ID, in.Instance, f.Subject, owner)
				}
			}
		}
		for _, v := range out {
			sort.Strings(v)
		}
		return out
	}

	var scanned *fleet.Result
	t.Run("finds the OOM-killed and near-limit containers only", func(t *testing.T) {
		res := diag(t)
		scanned = res
		g := got(t, res)
		for _, rule := range []string{"cgroup_near_limit", "cgroup_oom_kills"} {
			if !slices.Equal(g[rule], want[rule]) {
				t.Errorf("%s fired on\n  %v\nwant\n  %v", rule, g[rule], want[rule])
			}
		}
		t.Logf("%d instances, %d suspects, %d queries (%d for the scan)", len(res.Instances), res.Suspects, res.Cost.Queries, res.Cost.ScanQueries)
	})

	t.Run("the pre-filter points at the hosts of those containers", func(t *testing.T) {
		if scanned == nil {
			t.Skip("scan failed")
		}
		for _, in := range scanned.Instances {
			isPlain := slices.Contains(plain, in.Instance)
			// A score of 1 is the rule's threshold: the healthy containers
			// come within the pre-filter's margin, not to the threshold.
			for _, rule := range []string{"cgroup_near_limit", "cgroup_oom_kills"} {
				if at := in.Signals[rule] >= 1; at == isPlain || (!isPlain && !in.Suspect) {
					t.Errorf("%s: %s score %v, suspect %v (%v); want the threshold reached on the hosts with such containers only (plain hosts: %v)",
						in.Instance, rule, in.Signals[rule], in.Suspect, in.Signals, plain)
				}
			}
		}
	})

	t.Run("without the pre-filter the same", func(t *testing.T) {
		if scanned == nil {
			t.Skip("scan failed")
		}
		g, all := got(t, scanned), got(t, diag(t, "--all"))
		for _, rule := range []string{"cgroup_near_limit", "cgroup_oom_kills"} {
			if !slices.Equal(g[rule], all[rule]) {
				t.Errorf("%s: with the pre-filter %v, with --all %v", rule, g[rule], all[rule])
			}
		}
	})

	t.Run("one host by --match", func(t *testing.T) {
		inst := m.Hosts[0].Instance
		res := diag(t, "--match", `{instance="`+inst+`",job="node"}`)
		g := got(t, res)
		var wantOne []string
		for _, w := range want["cgroup_oom_kills"] {
			if strings.HasPrefix(w, inst+" ") {
				wantOne = append(wantOne, w)
			}
		}
		if len(wantOne) == 0 || !slices.Equal(g["cgroup_oom_kills"], wantOne) {
			t.Errorf("cgroup_oom_kills on %s: %v; want %v", inst, g["cgroup_oom_kills"], wantOne)
		}
	})
}

// splitOpenMetrics writes the samples of an OpenMetrics file (families of
// "# TYPE" and "name{labels} value timestamp" lines, as fleettest writes
// them) into one file per span of time since the epoch, each family's
// lines together under its TYPE line, and removes the original. It returns
// the files in time order.
func splitOpenMetrics(t *testing.T, path string, span time.Duration) []string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	type part struct {
		f      *os.File
		w      *bufio.Writer
		family string // the TYPE line last written
	}
	parts := map[int64]*part{}
	var typeLine string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			typeLine = line
			continue
		case line == "# EOF" || line == "":
			continue
		case strings.HasPrefix(line, "#"):
			t.Fatalf("%s: unexpected line %q", path, line)
		}
		ts, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		if err != nil || typeLine == "" {
			t.Fatalf("%s: sample line %q without a timestamp or a TYPE line", path, line)
		}
		k := ts / int64(span.Seconds())
		p := parts[k]
		if p == nil {
			f, err := os.Create(fmt.Sprintf("%s.%d", path, k))
			if err != nil {
				t.Fatal(err)
			}
			p = &part{f: f, w: bufio.NewWriterSize(f, 256<<10)}
			parts[k] = p
		}
		if p.family != typeLine {
			_, _ = p.w.WriteString(typeLine + "\n")
			p.family = typeLine
		}
		_, _ = p.w.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	keys := make([]int64, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var files []string
	for _, k := range keys {
		p := parts[k]
		_, _ = p.w.WriteString("# EOF\n")
		if err := p.w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := p.f.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, p.f.Name())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	return files
}
