package fleet

// Kubernetes containers: cadvisor's series (from the kubelet) and
// kube-state-metrics' container status, read for the hosts of a window and
// turned into the per-cgroup series memdoctor's collector writes, so the
// cgroup rules judge them unchanged. A container series belongs to the
// host whose node_uname_info nodename is its `node` label; a container is
// the cgroup namespace/pod/container, one series per name however many
// times it restarted (a new cgroup each time).

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/prometheus/common/model"
)

// cadvisorAs names the memdoctor series each cadvisor gauge becomes.
var cadvisorAs = map[string]string{
	diagnose.CadvisorWorkingSet: "memdoctor_cgroup_memory_working_set_bytes",
	diagnose.CadvisorUsage:      "memdoctor_cgroup_memory_usage_bytes",
	diagnose.CadvisorRSS:        "memdoctor_cgroup_memory_anon_bytes",
	diagnose.CadvisorCache:      "memdoctor_cgroup_memory_file_bytes",
	diagnose.CadvisorLimit:      "memdoctor_cgroup_memory_limit_bytes",
}

// container is what is read of one container over the window.
type container struct {
	ns, pod, name string
	podUID, id    string
	// gauges by memdoctor series name, merged over the container's
	// cgroups: the largest value at each time.
	gauges map[string]map[int64]float64
	// cadvisor's OOM event counters, one per cgroup the container had.
	oom [][]sample.Point
	// kube-state-metrics: restarts, and when the last termination was
	// OOMKilled.
	restarts  [][]sample.Point
	oomReason map[int64]bool
}

func (c *container) key() string { return c.ns + "/" + c.pod + "/" + c.name }

// HasContainers reports whether the Prometheus holds any container series
// (cadvisor's working set or kube-state-metrics' restart counts) within
// [from, to]: one query, so that a fleet without Kubernetes pays nothing
// more per batch of suspects than its own series.
func HasContainers(ctx context.Context, c *prom.Client, match string, from, to time.Time) (bool, error) {
	cm, r := diagnose.ContainerMatch(match), "["+promDur(to.Sub(from))+"]"
	expr := "count(last_over_time(" + promql.Selector(diagnose.CadvisorWorkingSet, cm, diagnose.ContainerMatchers) + r + ")) or " +
		"count(last_over_time(" + promql.Selector(diagnose.KSMRestarts, cm) + r + "))"
	v, err := c.Query(ctx, expr, to)
	if err != nil {
		return false, err
	}
	for _, s := range v {
		if s.Value > 0 {
			return true, nil
		}
	}
	return false, nil
}

// fetchContainers adds the containers of the instances' nodes to their
// windows (creating a window for an instance that has none).
func fetchContainers(ctx context.Context, c *prom.Client, instances []string, match string, from, to time.Time, step time.Duration, out map[string]*sample.Window) error {
	var alts []string
	for _, i := range instances {
		alts = append(alts, regexp.QuoteMeta(i))
	}
	v, err := c.Query(ctx, "max by (instance, nodename) (last_over_time("+
		promql.Selector("node_uname_info", match, `instance=~"`+escape(strings.Join(alts, "|"))+`"`)+"["+promDur(to.Sub(from))+"]))", to)
	if err != nil {
		return err
	}
	hostOf := map[string]string{} // nodename → instance
	var nodes []string
	for _, s := range v {
		n, inst := string(s.Labels["nodename"]), string(s.Labels["instance"])
		if n == "" || inst == "" || hostOf[n] != "" {
			continue
		}
		hostOf[n] = inst
		nodes = append(nodes, regexp.QuoteMeta(n))
	}
	if len(nodes) == 0 {
		return nil
	}
	sort.Strings(nodes)
	onNodes := `node=~"` + escape(strings.Join(nodes, "|")) + `"`
	cm := diagnose.ContainerMatch(match)
	ctrs := map[string]map[string]*container{} // instance → key → container
	get := func(ls model.Metric) (*container, string) {
		inst := hostOf[string(ls["node"])]
		ns, pod, name := string(ls["namespace"]), string(ls["pod"]), string(ls["container"])
		if inst == "" || ns == "" || pod == "" || name == "" || name == "POD" {
			return nil, ""
		}
		k := ns + "/" + pod + "/" + name
		if ctrs[inst] == nil {
			ctrs[inst] = map[string]*container{}
		}
		ct := ctrs[inst][k]
		if ct == nil {
			ct = &container{ns: ns, pod: pod, name: name, gauges: map[string]map[int64]float64{}, oomReason: map[int64]bool{}}
			ctrs[inst][k] = ct
		}
		return ct, inst
	}
	// cadvisor.
	ss, err := c.QueryRange(ctx, promql.Selector("", cm, `__name__=~"`+strings.Join(diagnose.CadvisorSeries, "|")+`"`, diagnose.ContainerMatchers, onNodes), from, to, step)
	if err != nil {
		return err
	}
	for _, s := range ss {
		ct, _ := get(s.Labels)
		if ct == nil {
			continue
		}
		if id := string(s.Labels["id"]); id != "" && ct.id == "" {
			ct.id = id
		}
		name := string(s.Labels[model.MetricNameLabel])
		if name == diagnose.CadvisorOOMEvents {
			ct.oom = append(ct.oom, points(s))
			continue
		}
		as := cadvisorAs[name]
		if as == "" {
			continue
		}
		g := ct.gauges[as]
		if g == nil {
			g = map[int64]float64{}
			ct.gauges[as] = g
		}
		for _, p := range s.Points {
			t, val := int64(p.Timestamp), float64(p.Value)
			if old, ok := g[t]; !ok || val > old {
				g[t] = val
			}
		}
	}
	// kube-state-metrics: its pod's node from kube_pod_info.
	podInfo := "topk by (namespace, pod) (1, max by (namespace, pod, node, uid) (" + promql.Selector(diagnose.KSMPodInfo, cm, onNodes) + "))"
	for _, q := range []struct{ name, extra string }{{diagnose.KSMRestarts, ""}, {diagnose.KSMLastTerminated, `reason="OOMKilled"`}} {
		expr := "max by (namespace, pod, container) (" + promql.Selector(q.name, cm, q.extra) + ") * on (namespace, pod) group_left (node, uid) " + podInfo
		ss, err := c.QueryRange(ctx, expr, from, to, step)
		if err != nil {
			return err
		}
		for _, s := range ss {
			ct, _ := get(s.Labels)
			if ct == nil {
				continue
			}
			if u := string(s.Labels["uid"]); u != "" {
				ct.podUID = u
			}
			if q.name == diagnose.KSMRestarts {
				ct.restarts = append(ct.restarts, points(s))
				continue
			}
			for _, p := range s.Points {
				if p.Value > 0 {
					ct.oomReason[int64(p.Timestamp)] = true
				}
			}
		}
	}
	for inst, byKey := range ctrs {
		w := out[inst]
		if w == nil {
			w = &sample.Window{Instance: inst, From: from, To: to, Step: step}
			out[inst] = w
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			addContainer(w, byKey[k])
		}
	}
	return nil
}

func points(s prom.Series) []sample.Point {
	ps := make([]sample.Point, len(s.Points))
	for i, p := range s.Points {
		ps[i] = sample.Point{T: int64(p.Timestamp), V: float64(p.Value)}
	}
	return ps
}

// addContainer writes one container's series into w as a cgroup's.
func addContainer(w *sample.Window, ct *container) {
	cg := ct.key()
	var times []int64
	seen := map[int64]bool{}
	for _, g := range ct.gauges {
		for t := range g {
			if !seen[t] {
				seen[t] = true
				times = append(times, t)
			}
		}
	}
	for _, ps := range append(append([][]sample.Point{}, ct.oom...), ct.restarts...) {
		for _, p := range ps {
			if !seen[p.T] {
				seen[p.T] = true
				times = append(times, p.T)
			}
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	if len(times) == 0 {
		return
	}
	lbl := sample.L("cgroup", cg)
	for _, name := range sortedKeys(ct.gauges) {
		g := ct.gauges[name]
		ser := &sample.Series{Name: name, Labels: lbl}
		for _, t := range times {
			if v, ok := g[t]; ok && (name != "memdoctor_cgroup_memory_limit_bytes" || v > 0) {
				ser.Points = append(ser.Points, sample.Point{T: t, V: v})
			}
		}
		if len(ser.Points) > 0 {
			w.Add(ser)
		}
	}
	// The inactive file cadvisor's working set left out: usage minus it.
	if u, ws := ct.gauges["memdoctor_cgroup_memory_usage_bytes"], ct.gauges["memdoctor_cgroup_memory_working_set_bytes"]; u != nil && ws != nil {
		ser := &sample.Series{Name: "memdoctor_cgroup_memory_stat", Labels: sample.L("cgroup", cg, "stat", "inactive_file")}
		for _, t := range times {
			a, ok1 := u[t]
			b, ok2 := ws[t]
			if ok1 && ok2 {
				ser.Points = append(ser.Points, sample.Point{T: t, V: max(a-b, 0)})
			}
		}
		if len(ser.Points) > 0 {
			w.Add(ser)
		}
	}
	if kills := oomKills(ct, times); kills != nil {
		w.Add(&sample.Series{Name: "memdoctor_cgroup_memory_events_total", Labels: sample.L("cgroup", cg, "event", "oom_kill"), Points: kills})
	}
	// Named as the host's collector names a Kubernetes container.
	owner := []string{"cgroup", cg, "kind", "kubernetes", "name", ct.ns + "/" + ct.pod + "/" + ct.name,
		"namespace", ct.ns, "pod", ct.pod, "container", ct.name}
	if ct.podUID != "" {
		owner = append(owner, "pod_uid", ct.podUID)
	}
	if i := strings.LastIndexByte(ct.id, '/'); i >= 0 && i+1 < len(ct.id) {
		owner = append(owner, "container_id", ct.id[i+1:])
	}
	w.Add(&sample.Series{Name: "memdoctor_cgroup_owner_info", Labels: sample.L(owner...),
		Points: []sample.Point{{T: times[0], V: 1}, {T: times[len(times)-1], V: 1}}})
}

// oomKills is the container's OOM-kill counter from the window's start:
// the larger of cadvisor's OOM events (summed over the container's
// cgroups, each counter's increase) and kube-state-metrics' restarts
// whose last termination was OOMKilled (without a restart counter, each
// time the OOMKilled reason appears). Nil when neither was read.
func oomKills(ct *container, times []int64) []sample.Point {
	if len(ct.oom) == 0 && len(ct.restarts) == 0 && len(ct.oomReason) == 0 {
		return nil
	}
	cad := map[int64]float64{}
	for _, ps := range ct.oom {
		for i := 1; i < len(ps); i++ {
			d := ps[i].V - ps[i-1].V
			if d < 0 {
				d = ps[i].V
			}
			if d > 0 {
				cad[ps[i].T] += d
			}
		}
	}
	ksm := map[int64]float64{}
	if len(ct.restarts) > 0 {
		for _, ps := range ct.restarts {
			for i := 1; i < len(ps); i++ {
				d := ps[i].V - ps[i-1].V
				if d < 0 {
					d = ps[i].V
				}
				if d > 0 && ct.oomReason[ps[i].T] {
					ksm[ps[i].T] += d
				}
			}
		}
	} else {
		for i := 1; i < len(times); i++ {
			if ct.oomReason[times[i]] && !ct.oomReason[times[i-1]] {
				ksm[times[i]]++
			}
		}
	}
	var a, b float64
	out := make([]sample.Point, 0, len(times))
	for _, t := range times {
		a += cad[t]
		b += ksm[t]
		out = append(out, sample.Point{T: t, V: max(a, b)})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
