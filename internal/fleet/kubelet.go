package fleet

// Clusters without node_exporter: cadvisor (the kubelet's) and
// kube-state-metrics only, as managed Prometheus services and
// kubelet-only scrapes have. There is no node_uname_info to name the
// hosts, so they are inferred from the container series themselves:
//
//   - a cadvisor series with a `node` label is on that node;
//   - one without is on the kubelet that was scraped (its `instance`), and
//     kube_pod_info's node of the pods seen there names that node, so that
//     kube-state-metrics' series (joined to nodes through kube_pod_info)
//     reach the same host;
//   - a node kube_pod_info names that no cadvisor series is on is a host
//     of kube-state-metrics' series alone.
//
// Each host is then judged on what it has: the container rules run as on a
// host's cgroups, the host rules are not evaluated for want of
// node_exporter, and a note says which joins were possible.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// SkipNoNodeExporter is the reason a host rule was not evaluated on a host
// known only from its containers' series.
const SkipNoNodeExporter = "no node_exporter"

// Kubelet says how the hosts of a cluster without node_exporter were
// inferred and which joins were possible.
type Kubelet struct {
	// NodeLabel hosts are named by cadvisor's node label; their pods'
	// kube-state-metrics series join them by kube_pod_info's node.
	NodeLabel int `json:"node_label_hosts"`
	// Instance hosts are the kubelets scraped whose cadvisor series have
	// no node label; PodNode of them were joined to a node by their pods'
	// kube_pod_info, the others have no kube-state-metrics series.
	Instance int `json:"instance_hosts"`
	PodNode  int `json:"pod_node_joined"`
	// KSMOnly hosts are nodes kube_pod_info names without cadvisor series.
	KSMOnly int    `json:"ksm_only_hosts"`
	Note    string `json:"note"`
}

// inference gathers what names the hosts.
type inference struct {
	cadNodes map[string]bool   // node labels of cadvisor series
	kubelets map[string]bool   // kubelet instances with series without one
	joined   map[string]string // such a kubelet → its pods' node
	podNodes map[string]bool   // nodes kube_pod_info names
}

func newInference() *inference {
	return &inference{cadNodes: map[string]bool{}, kubelets: map[string]bool{}, joined: map[string]string{}, podNodes: map[string]bool{}}
}

// result is the hosts (sorted), how series reach them, and the note.
func (f *inference) result() ([]string, *nodes, *Kubelet) {
	n := newNodes()
	k := &Kubelet{}
	for nd := range f.cadNodes {
		n.byNode[nd] = nd
		k.NodeLabel++
	}
	var unjoined int
	for inst := range f.kubelets {
		n.byKubelet[inst] = inst
		k.Instance++
		if nd := f.joined[inst]; nd != "" && n.byNode[nd] == "" {
			n.byNode[nd] = inst
			k.PodNode++
		} else {
			unjoined++
		}
	}
	for nd := range f.podNodes {
		if n.byNode[nd] == "" {
			n.byNode[nd] = nd
			k.KSMOnly++
		}
	}
	seen := map[string]bool{}
	var hosts []string
	for _, m := range []map[string]string{n.byNode, n.byKubelet} {
		for _, h := range m {
			if !seen[h] {
				seen[h] = true
				hosts = append(hosts, h)
			}
		}
	}
	sort.Strings(hosts)
	var parts []string
	if k.NodeLabel > 0 {
		parts = append(parts, fmt.Sprintf("%d by cadvisor's node label (kube-state-metrics joined by kube_pod_info's node)", k.NodeLabel))
	}
	if k.Instance > 0 {
		s := fmt.Sprintf("%d by the kubelet's instance only (cadvisor without a node label), %d of them joined to kube-state-metrics through their pods' kube_pod_info node", k.Instance, k.PodNode)
		if unjoined > 0 {
			s += fmt.Sprintf("; %d not (no kube_pod_info for their pods, or their node is named by another host): their OOMKilled restarts are not read, only cadvisor's OOM events", unjoined)
		}
		parts = append(parts, s)
	}
	if k.KSMOnly > 0 {
		parts = append(parts, fmt.Sprintf("%d nodes by kube-state-metrics alone (no cadvisor series: their OOMKilled restarts are judged, not their memory)", k.KSMOnly))
	}
	k.Note = fmt.Sprintf("no node_exporter: %d hosts inferred from their containers' series: %s. Host rules are not evaluated; "+
		"scrape node_exporter on the nodes for them (its node_uname_info nodename joins the containers to it)", len(hosts), strings.Join(parts, "; "))
	return hosts, n, k
}

// kubeletHosts infers the hosts of the cluster behind c from its container
// series within [from, to]: three instant queries.
func kubeletHosts(ctx context.Context, c *prom.Client, match string, from, to time.Time) ([]string, *nodes, *Kubelet, error) {
	cm, r := diagnose.ContainerMatch(match), "["+promDur(to.Sub(from))+"]"
	f := newInference()
	v, err := c.Query(ctx, "group by (node, instance) (last_over_time("+promql.Selector(diagnose.CadvisorWorkingSet, cm, diagnose.ContainerMatchers)+r+"))", to)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, s := range v {
		if nd := s.Labels["node"]; nd != "" {
			f.cadNodes[nd] = true
		} else if inst := s.Labels["instance"]; inst != "" {
			f.kubelets[inst] = true
		}
	}
	podInfo := "topk by (namespace, pod) (1, group by (namespace, pod, node) (last_over_time(" + promql.Selector(diagnose.KSMPodInfo, cm, `node!=""`) + r + ")))"
	if len(f.kubelets) > 0 {
		v, err := c.Query(ctx, "group by (instance, node) (group by (namespace, pod, instance) (last_over_time("+
			promql.Selector(diagnose.CadvisorWorkingSet, cm, diagnose.ContainerMatchers, `node=""`)+r+")) * on (namespace, pod) group_left (node) "+podInfo+")", to)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, s := range v {
			inst, nd := s.Labels["instance"], s.Labels["node"]
			if f.kubelets[inst] && nd != "" && (f.joined[inst] == "" || nd < f.joined[inst]) {
				f.joined[inst] = nd
			}
		}
	}
	v, err = c.Query(ctx, "group by (node) ("+podInfo+")", to)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, s := range v {
		if nd := s.Labels["node"]; nd != "" {
			f.podNodes[nd] = true
		}
	}
	hosts, n, k := f.result()
	return hosts, n, k, nil
}

// NoNodeExporter rewrites the report of a host known only from its
// containers' series: the rules that were not evaluated because a
// node_exporter series is missing get the reason "no node_exporter", and
// their notes give way to one.
func NoNodeExporter(rep *model.Report) {
	host := map[string]bool{}
	for _, r := range diagnose.Rules() {
		m := r.Meta()
		for _, n := range m.Needs {
			if strings.HasPrefix(n.Series, "node_") {
				host[m.ID] = true
			}
		}
	}
	var ids []string
	skipped := map[string]bool{}
	for i, s := range rep.Coverage.NotEvaluated {
		if host[s.ID] && s.Reason == model.SkipMissingData {
			rep.Coverage.NotEvaluated[i].Reason = SkipNoNodeExporter
			rep.Coverage.NotEvaluated[i].Fix = "scrape node_exporter on the node"
			ids = append(ids, s.ID)
			skipped[s.ID] = true
		}
	}
	if len(ids) == 0 {
		return
	}
	notes := rep.Notes[:0:0]
	for _, n := range rep.Notes {
		if onlyRules(n.Source, skipped) {
			continue
		}
		notes = append(notes, n)
	}
	rep.Notes = append([]sample.Note{{Source: "rules " + strings.Join(ids, ", "),
		Message: "not evaluated: no node_exporter (the host is known from its containers' cadvisor and kube-state-metrics series only)",
		Hides:   "the host's own memory: available memory, kernel memory, reclaim, processes",
		Fix:     "scrape node_exporter on the nodes"}}, notes...)
}

// onlyRules reports whether a note's source names rules ("rule a",
// "rules a, b") all of which are in ids.
func onlyRules(source string, ids map[string]bool) bool {
	var list string
	switch {
	case strings.HasPrefix(source, "rules "):
		list = strings.TrimPrefix(source, "rules ")
	case strings.HasPrefix(source, "rule "):
		list = strings.TrimPrefix(source, "rule ")
	default:
		return false
	}
	for _, id := range strings.Split(list, ", ") {
		if !ids[id] {
			return false
		}
	}
	return true
}

// Reader streams a recording's series, for a cluster without
// node_exporter read from a file (diagnose --from).
type Reader struct {
	// Instances are the recording's instances (scrape targets: kubelets,
	// kube-state-metrics).
	Instances []string
	// Each streams the series of names of one instance over From … To
	// at Step.
	Each     func(instance string, names []string, fn func(*sample.Series) error) error
	From, To time.Time
	Step     time.Duration
}

// KubeletWindows judges a recording of cadvisor and kube-state-metrics
// series as Scan judges such a cluster: it infers the hosts, and for a
// batch of them at a time reads their containers, turns them into the
// hosts' windows and gives each to judge. The recording is read once to
// name the hosts (of each series its labels only are kept), then, per
// batch, the kubelets of those hosts and kube-state-metrics' containers
// again: memory holds a batch's containers, as Scan's does. A nil Kubelet
// means the recording holds no container series.
func KubeletWindows(r Reader, judge func(host string, w *sample.Window) error) (*Kubelet, error) {
	f := newInference()
	podNode, podUID := map[string]string{}, map[string]string{}
	kubeletPods := map[string]string{}    // namespace/pod → kubelet instance (no node label)
	feeds := map[string]map[string]bool{} // node label → kubelet instances with it
	ksm := map[string]bool{}              // instances with kube_pod_info
	for _, inst := range r.Instances {
		err := r.Each(inst, []string{diagnose.CadvisorWorkingSet, diagnose.KSMPodInfo}, func(s *sample.Series) error {
			ns, pod := s.Labels.Get("namespace"), s.Labels.Get("pod")
			if ns == "" || pod == "" {
				return nil
			}
			k, nd := ns+"/"+pod, s.Labels.Get("node")
			if s.Name == diagnose.KSMPodInfo {
				if nd != "" {
					podNode[k], podUID[k] = nd, s.Labels.Get("uid")
					f.podNodes[nd] = true
					ksm[inst] = true
				}
				return nil
			}
			if c := s.Labels.Get("container"); c == "" || c == "POD" {
				return nil
			}
			if nd != "" {
				f.cadNodes[nd] = true
				if feeds[nd] == nil {
					feeds[nd] = map[string]bool{}
				}
				feeds[nd][inst] = true
				return nil
			}
			f.kubelets[inst] = true
			kubeletPods[k] = inst
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(f.cadNodes) == 0 && len(f.kubelets) == 0 && len(f.podNodes) == 0 {
		return nil, nil
	}
	for k, inst := range kubeletPods {
		if nd := podNode[k]; nd != "" && (f.joined[inst] == "" || nd < f.joined[inst]) {
			f.joined[inst] = nd
		}
	}
	hosts, n, kub := f.result()
	cadvisor := strings.Split(cadvisorNames(), "|")
	snap := func(ps []sample.Point) []sample.Point {
		if r.Step <= 0 {
			return ps
		}
		from, step := r.From.UnixMilli(), r.Step.Milliseconds()
		for i := range ps {
			ps[i].T = from + floorDiv(ps[i].T-from, step)*step
		}
		return ps
	}
	for i := 0; i < len(hosts); i += batchSize {
		batch := hosts[i:min(len(hosts), i+batchSize)]
		nb := n.only(batch)
		cs := newContainerSet(nb)
		read := map[string]bool{}
		for nd := range nb.byNode {
			for inst := range feeds[nd] {
				read[inst] = true
			}
		}
		for inst := range nb.byKubelet {
			read[inst] = true
		}
		for _, inst := range sortedKeys(read) {
			err := r.Each(inst, cadvisor, func(s *sample.Series) error {
				cs.addCadvisor(s.Name, func(k string) string {
					if k == "instance" {
						return inst
					}
					return s.Labels.Get(k)
				}, snap(s.Points))
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		for _, inst := range sortedKeys(ksm) {
			err := r.Each(inst, []string{diagnose.KSMRestarts, diagnose.KSMLastTerminated}, func(s *sample.Series) error {
				if s.Name == diagnose.KSMLastTerminated && s.Labels.Get("reason") != "OOMKilled" {
					return nil
				}
				pod := s.Labels.Get("namespace") + "/" + s.Labels.Get("pod")
				cs.addKSM(s.Name, func(k string) string {
					switch k {
					case "node":
						return podNode[pod]
					case "uid":
						return podUID[pod]
					case "instance":
						return ""
					}
					return s.Labels.Get(k)
				}, snap(s.Points))
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		ws := map[string]*sample.Window{}
		cs.writeTo(ws, r.From, r.To, r.Step)
		for _, h := range batch {
			w := ws[h]
			if w == nil {
				w = &sample.Window{Instance: h, From: r.From, To: r.To, Step: r.Step}
			}
			delete(ws, h)
			if err := judge(h, w); err != nil {
				return nil, err
			}
		}
	}
	return kub, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
