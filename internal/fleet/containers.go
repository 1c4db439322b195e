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
)

// asSeries is the memdoctor series a cadvisor series becomes: a name and
// the labels beside the cgroup's.
type asSeries struct {
	name   string
	labels []string
	// unsetZero: 0 means not set (a limit) and is left out.
	unsetZero bool
}

// cadvisorAs names the memdoctor series each cadvisor series becomes, so
// that what a host's collector writes of a cgroup and what cadvisor says of
// a container are read alike. Series a cadvisor does not export (the
// kernel's usage is newer than the rest) are simply absent.
var cadvisorAs = map[string]asSeries{
	diagnose.CadvisorWorkingSet:     {name: "memdoctor_cgroup_memory_working_set_bytes"},
	diagnose.CadvisorUsage:          {name: "memdoctor_cgroup_memory_usage_bytes"},
	diagnose.CadvisorRSS:            {name: "memdoctor_cgroup_memory_anon_bytes"},
	diagnose.CadvisorCache:          {name: "memdoctor_cgroup_memory_file_bytes"},
	diagnose.CadvisorLimit:          {name: "memdoctor_cgroup_memory_limit_bytes", unsetZero: true},
	"container_memory_mapped_file":  {name: "memdoctor_cgroup_memory_stat", labels: []string{"stat", "file_mapped"}},
	"container_memory_swap":         {name: "memdoctor_cgroup_memory_swap_bytes"},
	"container_memory_kernel_usage": {name: "memdoctor_cgroup_memory_stat", labels: []string{"stat", "kernel"}},
	// failcnt counts the times usage hit the limit: memory.events' max.
	"container_memory_failcnt": {name: "memdoctor_cgroup_memory_events_total", labels: []string{"event", "max"}},
	// The reservation is memory.low on v2 (the soft limit on v1).
	"container_spec_memory_reservation_limit_bytes": {name: "memdoctor_cgroup_memory_low_bytes", unsetZero: true},
}

// cadvisorNames are the cadvisor series read per container, as a
// regular expression's alternatives: cadvisorAs's and the OOM events.
func cadvisorNames() string {
	names := []string{diagnose.CadvisorOOMEvents}
	for n := range cadvisorAs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "|")
}

// container is what is read of one container over the window.
type container struct {
	ns, pod, name string
	podUID, id    string
	// gauges by cadvisor series name, merged over the container's
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

// nodes says which host (the window's instance) a container series
// belongs to: by its `node` label (cadvisor's, or the node
// kube_pod_info gives a kube-state-metrics series' pod), or, for a
// cadvisor series without one, by the kubelet's instance that was
// scraped.
type nodes struct {
	byNode    map[string]string
	byKubelet map[string]string
}

func newNodes() *nodes { return &nodes{byNode: map[string]string{}, byKubelet: map[string]string{}} }

// host is the host of a series whose labels label gives ("" when none).
func (n *nodes) host(label func(string) string) string {
	if nd := label("node"); nd != "" {
		return n.byNode[nd]
	}
	return n.byKubelet[label("instance")]
}

// only is n restricted to the hosts named.
func (n *nodes) only(hosts []string) *nodes {
	keep := map[string]bool{}
	for _, h := range hosts {
		keep[h] = true
	}
	out := newNodes()
	for k, h := range n.byNode {
		if keep[h] {
			out.byNode[k] = h
		}
	}
	for k, h := range n.byKubelet {
		if keep[h] {
			out.byKubelet[k] = h
		}
	}
	return out
}

// selectors are the selectors of n's cadvisor series (node-labelled, and
// per kubelet instance without a node label), and of the nodes
// kube-state-metrics' pods are joined on ("" when there are none).
func (n *nodes) selectors() (cadvisor []string, onNodes string) {
	quoted := func(m map[string]string) string {
		var alts []string
		for k := range m {
			alts = append(alts, regexp.QuoteMeta(k))
		}
		sort.Strings(alts)
		return escape(strings.Join(alts, "|"))
	}
	if len(n.byNode) > 0 {
		onNodes = `node=~"` + quoted(n.byNode) + `"`
		cadvisor = append(cadvisor, onNodes)
	}
	if len(n.byKubelet) > 0 {
		cadvisor = append(cadvisor, `node="",instance=~"`+quoted(n.byKubelet)+`"`)
	}
	return cadvisor, onNodes
}

// containerSet gathers the containers read of a set of hosts.
type containerSet struct {
	nodes *nodes
	ctrs  map[string]map[string]*container // host → key → container
}

func newContainerSet(n *nodes) *containerSet {
	return &containerSet{nodes: n, ctrs: map[string]map[string]*container{}}
}

// get is the container a series (its labels by label) is of, nil when it
// is none of the hosts' or no container's.
func (cs *containerSet) get(label func(string) string) *container {
	inst := cs.nodes.host(label)
	ns, pod, name := label("namespace"), label("pod"), label("container")
	if inst == "" || ns == "" || pod == "" || name == "" || name == "POD" {
		return nil
	}
	k := ns + "/" + pod + "/" + name
	if cs.ctrs[inst] == nil {
		cs.ctrs[inst] = map[string]*container{}
	}
	ct := cs.ctrs[inst][k]
	if ct == nil {
		ct = &container{ns: ns, pod: pod, name: name, gauges: map[string]map[int64]float64{}, oomReason: map[int64]bool{}}
		cs.ctrs[inst][k] = ct
	}
	return ct
}

// addCadvisor adds one cadvisor series of a container's cgroup.
func (cs *containerSet) addCadvisor(name string, label func(string) string, ps []sample.Point) {
	ct := cs.get(label)
	if ct == nil {
		return
	}
	if id := label("id"); id != "" && ct.id == "" {
		ct.id = id
	}
	if name == diagnose.CadvisorOOMEvents {
		ct.oom = append(ct.oom, ps)
		return
	}
	if _, ok := cadvisorAs[name]; !ok {
		return
	}
	g := ct.gauges[name]
	if g == nil {
		g = map[int64]float64{}
		ct.gauges[name] = g
	}
	for _, p := range ps {
		if old, ok := g[p.T]; !ok || p.V > old {
			g[p.T] = p.V
		}
	}
}

// addKSM adds one kube-state-metrics series of a container (its labels
// with its pod's node and uid): restarts, or the OOMKilled last
// termination reason.
func (cs *containerSet) addKSM(name string, label func(string) string, ps []sample.Point) {
	ct := cs.get(label)
	if ct == nil {
		return
	}
	if u := label("uid"); u != "" {
		ct.podUID = u
	}
	if name == diagnose.KSMRestarts {
		if len(ct.restarts) == 0 {
			ct.restarts = append(ct.restarts, ps)
			return
		}
		// The same container's counter twice (two kube-state-metrics
		// replicas scraped): one, the larger at each time.
		ct.restarts[0] = maxMerge(ct.restarts[0], ps)
		return
	}
	for _, p := range ps {
		if p.V > 0 {
			ct.oomReason[p.T] = true
		}
	}
}

// writeTo adds the containers to their hosts' windows (creating a window
// for a host that has none).
func (cs *containerSet) writeTo(out map[string]*sample.Window, from, to time.Time, step time.Duration) {
	for inst, byKey := range cs.ctrs {
		w := out[inst]
		if w == nil {
			w = &sample.Window{Instance: inst, From: from, To: to, Step: step}
			out[inst] = w
		}
		for _, k := range sortedKeys(byKey) {
			addContainer(w, byKey[k])
		}
	}
}

// hostNodes maps the instances' node_uname_info nodenames to them.
func hostNodes(ctx context.Context, c *prom.Client, instances []string, match string, from, to time.Time) (*nodes, error) {
	var alts []string
	for _, i := range instances {
		alts = append(alts, regexp.QuoteMeta(i))
	}
	v, err := c.Query(ctx, "max by (instance, nodename) (last_over_time("+
		promql.Selector("node_uname_info", match, `instance=~"`+escape(strings.Join(alts, "|"))+`"`)+"["+promDur(to.Sub(from))+"]))", to)
	if err != nil {
		return nil, err
	}
	n := newNodes()
	for _, s := range v {
		nd, inst := s.Labels["nodename"], s.Labels["instance"]
		if nd == "" || inst == "" || n.byNode[nd] != "" {
			continue
		}
		n.byNode[nd] = inst
	}
	return n, nil
}

// fetchContainers adds the containers of the hosts n names to their
// windows: cadvisor's series in one range query (two when some hosts are
// kubelets without a node label), kube-state-metrics' restarts and
// OOMKilled reasons (joined to their pods' nodes) in two.
func fetchContainers(ctx context.Context, c *prom.Client, n *nodes, match string, from, to time.Time, step time.Duration, out map[string]*sample.Window) error {
	sels, onNodes := n.selectors()
	if len(sels) == 0 {
		return nil
	}
	cm := diagnose.ContainerMatch(match)
	cs := newContainerSet(n)
	// One query per selector (node-labelled, kubelets without): an `or`
	// of the two costs Prometheus a match of every series at every step.
	for _, sel := range sels {
		ss, err := c.QueryRange(ctx, promql.Selector("", cm, `__name__=~"`+cadvisorNames()+`"`, diagnose.ContainerMatchers, sel), from, to, step)
		if err != nil {
			return err
		}
		for _, s := range ss {
			cs.addCadvisor(s.Labels[prom.MetricNameLabel], metricLabel(s.Labels), points(s))
		}
	}
	if onNodes != "" {
		// kube-state-metrics: its pod's node from kube_pod_info.
		podInfo := "topk by (namespace, pod) (1, max by (namespace, pod, node, uid) (" + promql.Selector(diagnose.KSMPodInfo, cm, onNodes) + "))"
		for _, q := range []struct{ name, extra string }{{diagnose.KSMRestarts, ""}, {diagnose.KSMLastTerminated, `reason="OOMKilled"`}} {
			expr := "max by (namespace, pod, container) (" + promql.Selector(q.name, cm, q.extra) + ") * on (namespace, pod) group_left (node, uid) " + podInfo
			ss, err := c.QueryRange(ctx, expr, from, to, step)
			if err != nil {
				return err
			}
			for _, s := range ss {
				cs.addKSM(q.name, metricLabel(s.Labels), points(s))
			}
		}
	}
	cs.writeTo(out, from, to, step)
	return nil
}

func metricLabel(m prom.Labels) func(string) string {
	return func(k string) string { return m[k] }
}

// maxMerge merges two series of points in time order: the larger value
// where both have a time.
func maxMerge(a, b []sample.Point) []sample.Point {
	out := make([]sample.Point, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].T < b[j].T):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].T < a[i].T:
			out = append(out, b[j])
			j++
		default:
			out = append(out, sample.Point{T: a[i].T, V: max(a[i].V, b[j].V)})
			i++
			j++
		}
	}
	return out
}

func points(s prom.Series) []sample.Point {
	ps := make([]sample.Point, len(s.Points))
	for i, p := range s.Points {
		ps[i] = sample.Point{T: p.T, V: p.V}
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
	for _, name := range sortedKeys(ct.gauges) {
		g, as := ct.gauges[name], cadvisorAs[name]
		ser := &sample.Series{Name: as.name, Labels: sample.L(append([]string{"cgroup", cg}, as.labels...)...)}
		for _, t := range times {
			if v, ok := g[t]; ok && (!as.unsetZero || v > 0) {
				ser.Points = append(ser.Points, sample.Point{T: t, V: v})
			}
		}
		if len(ser.Points) > 0 {
			w.Add(ser)
		}
	}
	// The inactive file cadvisor's working set left out: usage minus it.
	if u, ws := ct.gauges[diagnose.CadvisorUsage], ct.gauges[diagnose.CadvisorWorkingSet]; u != nil && ws != nil {
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
