package main

// A cluster without node_exporter: cadvisor's and kube-state-metrics'
// series only, as managed Prometheus services and kubelet-only scrapes
// have. Hundreds of pods over six nodes (one whose kubelet scrape gives
// cadvisor's series no node label), backfilled into a real Prometheus and
// read from the OpenMetrics file: every near-limit and OOM-killed (once,
// over and over, or a process within) container must be named, on its
// host, and no page-cache-heavy or healthy one.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/fleettest"
	"github.com/memdoctor/memdoctor/internal/model"
)

func TestFleetPodsWithoutNodeExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills a cluster into Prometheus")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	end := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	start := end.Add(-24 * time.Hour)
	var hosts []fleettest.Host
	for _, n := range []string{"k8s-a", "k8s-b", "k8s-c", "k8s-d", "k8s-e", "k8s-f"} {
		hosts = append(hosts, fleettest.Host{Instance: n + ":9100"}) // the node's name, no node_exporter written
	}
	om := filepath.Join(dir, "cluster.om")
	ctrs, err := fleettest.WriteContainers(om, fleettest.ContainerOptions{
		Hosts: hosts, PerHost: 40, From: start, To: end, Interval: 5 * time.Minute,
		KillAfter: end.Add(-20 * time.Hour), Seed: 27, NoNodeLabel: []string{"k8s-d:9100"},
		// The container rules name at most 10 cgroups a host each: fewer
		// than that near the limit or OOM-killed per node, most healthy or
		// page-cache heavy, as a cluster has them.
		Kinds: []string{fleettest.Healthy, fleettest.CacheHeavy, fleettest.NearAnon, fleettest.Healthy, fleettest.CacheHeavy, fleettest.OOMLooping,
			fleettest.Healthy, fleettest.CacheHeavy, fleettest.OOMRestarted, fleettest.Healthy, fleettest.CacheHeavy, fleettest.OOMChild}})
	if err != nil {
		t.Fatal(err)
	}
	// Where each container's findings belong: its node, or the kubelet
	// scraped when cadvisor's series have no node label.
	hostOf := func(c fleettest.Container) string {
		if c.Node == "k8s-d" {
			return "k8s-d:10250"
		}
		return c.Node
	}
	want := map[string][]string{}
	quiet := map[string]bool{}   // containers nothing may fire on
	looping := map[string]bool{} // may be near the limit too, between kills
	kinds := map[string]int{}
	for _, c := range ctrs {
		kinds[c.Kind]++
		switch c.Kind {
		case fleettest.NearAnon:
			want["cgroup_near_limit"] = append(want["cgroup_near_limit"], hostOf(c)+" "+c.Key())
		case fleettest.OOMLooping, fleettest.OOMRestarted, fleettest.OOMChild:
			want["cgroup_oom_kills"] = append(want["cgroup_oom_kills"], hostOf(c)+" "+c.Key())
			looping[hostOf(c)+" "+c.Key()] = c.Kind == fleettest.OOMLooping
		default:
			quiet[c.Key()] = true
		}
	}
	if len(ctrs) < 200 || kinds[fleettest.OOMLooping] < 15 || kinds[fleettest.CacheHeavy] < 50 {
		t.Fatalf("the cluster has %d containers (%v); want hundreds, dozens of each kind", len(ctrs), kinds)
	}
	for _, v := range want {
		sort.Strings(v)
	}
	// findings gives, per container rule, "host namespace/pod/container"
	// of each finding, and fails on any finding about a quiet container.
	check := func(t *testing.T, got map[string][]string, findings []model.Finding) {
		t.Helper()
		for _, f := range findings {
			if key := strings.TrimPrefix(f.Subject, "cgroup "); quiet[key] {
				t.Errorf("%s fired on %s, a healthy or page-cache-heavy container: %s", f.ID, key, f.Summary)
			}
		}
		// An OOM-looping container climbing to its limit again is near it.
		got["cgroup_near_limit"] = slices.DeleteFunc(got["cgroup_near_limit"], func(k string) bool { return looping[k] })
		for _, rule := range []string{"cgroup_near_limit", "cgroup_oom_kills"} {
			sort.Strings(got[rule])
			if !slices.Equal(got[rule], want[rule]) {
				t.Errorf("%s fired on %d:\n  %v\nwant %d:\n  %v", rule, len(got[rule]), got[rule], len(want[rule]), want[rule])
			}
		}
	}
	checkKubelet := func(t *testing.T, k *fleet.Kubelet) {
		t.Helper()
		if k == nil {
			t.Fatal("no note on how the hosts were inferred")
		}
		if k.NodeLabel != 5 || k.Instance != 1 || k.PodNode != 1 || k.KSMOnly != 0 {
			t.Errorf("hosts inferred %+v; want 5 by the node label, 1 by the kubelet's instance joined to its node by kube_pod_info", *k)
		}
		for _, s := range []string{"no node_exporter", "node label", "kubelet's instance", "kube_pod_info"} {
			if !strings.Contains(k.Note, s) {
				t.Errorf("the note does not say %q: %s", s, k.Note)
			}
		}
	}
	hostRule := func(t *testing.T, skips []model.RuleSkip) {
		t.Helper()
		var noNode []string
		for _, s := range skips {
			if s.ID == "cgroup_near_limit" || s.ID == "cgroup_oom_kills" {
				t.Errorf("%s not evaluated: %s %s", s.ID, s.Reason, s.Detail)
			}
			if s.Reason == fleet.SkipNoNodeExporter {
				noNode = append(noNode, s.ID)
			}
		}
		if !slices.Contains(noNode, "available_memory_decline") || !slices.Contains(noNode, "slab_unreclaimable_growth") {
			t.Errorf("host rules not evaluated for want of node_exporter: %v; want the host rules listed", noNode)
		}
	}

	t.Run("from the OpenMetrics file", func(t *testing.T) {
		out, errOut, code := runBin(t, "diagnose", "--from", om, "--json")
		if code != 0 {
			t.Fatalf("diagnose --from exited %d: %s", code, errOut)
		}
		var d struct {
			Findings  []model.Finding `json:"findings"`
			Coverage  model.Coverage  `json:"coverage"`
			Instances []struct {
				Instance string `json:"instance"`
			} `json:"instances"`
			Kubelet *fleet.Kubelet `json:"kubelet"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v\n%.2000s", err, out)
		}
		checkKubelet(t, d.Kubelet)
		var insts []string
		for _, in := range d.Instances {
			insts = append(insts, in.Instance)
		}
		if wantHosts := []string{"k8s-a", "k8s-b", "k8s-c", "k8s-d:10250", "k8s-e", "k8s-f"}; !slices.Equal(insts, wantHosts) {
			t.Errorf("hosts %v; want %v", insts, wantHosts)
		}
		// The file's findings name no host: match them by container,
		// whose names are unique in the cluster.
		got := map[string][]string{}
		host := map[string]string{}
		for _, c := range ctrs {
			host[c.Key()] = hostOf(c)
		}
		for _, f := range d.Findings {
			if f.ID == "cgroup_near_limit" || f.ID == "cgroup_oom_kills" {
				key := strings.TrimPrefix(f.Subject, "cgroup ")
				got[f.ID] = append(got[f.ID], host[key]+" "+key)
			}
		}
		check(t, got, d.Findings)
		hostRule(t, d.Coverage.NotEvaluated)
	})

	// promtool reads its whole input once per two-hour block: one file
	// per block.
	for _, f := range splitOpenMetrics(t, om, 2*time.Hour) {
		if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", f, filepath.Join(dir, "tsdb")).CombinedOutput(); err != nil {
			t.Fatalf("promtool backfill of %s: %v\n%s", f, err, out)
		}
		_ = os.Remove(f)
	}
	srv := startPrometheus(t, dir, "")

	t.Run("through Prometheus", func(t *testing.T) {
		out, errOut, code := runBin(t, "diagnose", "--prometheus", srv.url, "--until", end.Format(time.RFC3339), "--range", "1d", "--json",
			"--prometheus-timeout", "5m") // the answers of a loaded host
		if code != 0 {
			t.Fatalf("diagnose --prometheus exited %d: %s", code, errOut)
		}
		var res fleet.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%.2000s", err, out)
		}
		checkKubelet(t, res.Kubelet)
		got := map[string][]string{}
		var all []model.Finding
		var insts []string
		for _, in := range res.Instances {
			insts = append(insts, in.Instance)
			if in.Error != "" {
				t.Errorf("%s: %s", in.Instance, in.Error)
			}
			hostRule(t, in.NotEvaluated)
			all = append(all, in.Findings...)
			for _, f := range in.Findings {
				if f.ID == "cgroup_near_limit" || f.ID == "cgroup_oom_kills" {
					got[f.ID] = append(got[f.ID], in.Instance+" "+strings.TrimPrefix(f.Subject, "cgroup "))
				}
			}
		}
		sort.Strings(insts)
		if wantHosts := []string{"k8s-a", "k8s-b", "k8s-c", "k8s-d:10250", "k8s-e", "k8s-f"}; !slices.Equal(insts, wantHosts) {
			t.Errorf("hosts %v; want %v", insts, wantHosts)
		}
		check(t, got, all)
		t.Logf("%d hosts, %d queries (%d for the scan), %.1f s", len(res.Instances), res.Cost.Queries, res.Cost.ScanQueries, res.Cost.DurationSeconds)

		// A --match naming node exporters that are not there is refused,
		// not read as the whole cluster.
		_, errOut, code = runBin(t, "diagnose", "--prometheus", srv.url, "--until", end.Format(time.RFC3339), "--range", "1d",
			"--match", `{job="node"}`, "--prometheus-timeout", "5m")
		if code == 0 || !strings.Contains(errOut, "no job or instance") {
			t.Errorf("--match {job=\"node\"} on a cluster without node_exporter: exit %d, %s; want a refusal naming the matchers to give", code, errOut)
		}
	})
}
