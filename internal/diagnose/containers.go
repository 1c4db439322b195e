package diagnose

// Kubernetes containers seen through Prometheus: cadvisor's per-container
// series (scraped from the kubelet) and kube-state-metrics' pod status are
// read into the same per-cgroup series the host collector writes
// (internal/fleet translates them), so that cgroup_near_limit and
// cgroup_oom_kills judge a cluster's containers from the data it already
// has. Here are the names and the pre-filter's PromQL for them; the rules
// own their thresholds.
//
// A container series belongs to the host whose node_uname_info nodename is
// the series' `node` label (the label a kubelet scrape carries with the
// usual relabelling, and kube_pod_info's). A container is named
// namespace/pod/container: the cgroup label of the translated series.

import "strings"

// cadvisor's and kube-state-metrics' series the Prometheus source reads.
const (
	CadvisorWorkingSet = "container_memory_working_set_bytes"
	CadvisorUsage      = "container_memory_usage_bytes"
	CadvisorRSS        = "container_memory_rss"
	CadvisorCache      = "container_memory_cache"
	CadvisorLimit      = "container_spec_memory_limit_bytes"
	CadvisorOOMEvents  = "container_oom_events_total"
	KSMLastTerminated  = "kube_pod_container_status_last_terminated_reason"
	KSMRestarts        = "kube_pod_container_status_restarts_total"
	KSMPodInfo         = "kube_pod_info"
)

// CadvisorSeries are cadvisor's series read per container.
var CadvisorSeries = []string{CadvisorWorkingSet, CadvisorUsage, CadvisorRSS, CadvisorCache, CadvisorLimit, CadvisorOOMEvents}

// ContainerMatchers leave out cadvisor's pod-level and aggregate series:
// the pod's own cgroup and the pause ("POD") container, and the node's and
// slices' (no container label).
const ContainerMatchers = `container!="",container!="POD"`

// ContainerMatch is the part of a --match selector that applies to
// container series: its matchers on job and instance name the node's
// exporters, not the kubelet or kube-state-metrics, and are dropped
// (the join on the node keeps to the matched hosts).
func ContainerMatch(match string) string {
	var keep []string
	for _, m := range splitMatchers(match) {
		name := strings.TrimSpace(m)
		if i := strings.IndexAny(name, "=!"); i > 0 {
			name = strings.TrimSpace(name[:i])
		}
		if name == "job" || name == "instance" {
			continue
		}
		keep = append(keep, m)
	}
	if len(keep) == 0 {
		return ""
	}
	return "{" + strings.Join(keep, ",") + "}"
}

// splitMatchers splits a canonical selector's matchers at the commas
// outside quotes.
func splitMatchers(match string) []string {
	s := strings.TrimSpace(match)
	s = strings.TrimPrefix(s, "{")
	s = strings.TrimSuffix(s, "}")
	var out []string
	start, quoted, esc := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case c == '\\' && quoted:
			esc = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			if t := strings.TrimSpace(s[start:i]); t != "" {
				out = append(out, t)
			}
			start = i + 1
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

// containerSel selects a cadvisor series of containers only.
func containerSel(name, match string) string {
	return sel(name, ContainerMatch(match), ContainerMatchers)
}

// onHost turns an expression with a `node` label into one value per
// host instance: the largest of the node's, on the instance whose
// node_uname_info nodename is that node (one instance per node).
func onHost(e string, a PrefilterArgs) string {
	return byInstance(`label_replace(max by (node) (` + e + `), "nodename", "$1", "node", "(.+)") * on (nodename) group_left (instance) ` +
		`topk by (nodename) (1, max by (nodename, instance) (last_over_time(` + sel("node_uname_info", a.Match) + `[` + a.Window() + `])))`)
}

// podNode gives a kube-state-metrics expression by namespace and pod its
// pod's node (kube_pod_info, seen within the range).
func podNode(e string, a PrefilterArgs) string {
	return `(` + e + `) * on (namespace, pod) group_left (node) topk by (namespace, pod) (1, max by (namespace, pod, node) (last_over_time(` +
		sel(KSMPodInfo, ContainerMatch(a.Match), `node!=""`) + `[` + a.Window() + `])))`
}
