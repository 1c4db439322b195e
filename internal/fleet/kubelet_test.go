package fleet

import (
	"slices"
	"strings"
	"testing"
)

// TestInferHosts: the hosts of a cluster without node_exporter, by each
// join: cadvisor's node label, the kubelet's instance (joined to its node
// by its pods' kube_pod_info, or not), a node kube-state-metrics alone
// names; and the note says which joins were possible.
func TestInferHosts(t *testing.T) {
	f := newInference()
	f.cadNodes["n1"], f.cadNodes["n2"] = true, true
	f.kubelets["10.0.0.3:10250"], f.kubelets["10.0.0.4:10250"] = true, true
	f.joined["10.0.0.3:10250"] = "n3"
	f.podNodes["n1"], f.podNodes["n3"], f.podNodes["n5"] = true, true, true
	hosts, n, k := f.result()
	if want := []string{"10.0.0.3:10250", "10.0.0.4:10250", "n1", "n2", "n5"}; !slices.Equal(hosts, want) {
		t.Errorf("hosts %v; want %v", hosts, want)
	}
	for _, c := range []struct{ node, instance, want string }{
		{"n1", "", "n1"}, {"n2", "x", "n2"}, {"n3", "", "10.0.0.3:10250"}, // kube-state-metrics of n3's pods
		{"", "10.0.0.4:10250", "10.0.0.4:10250"}, {"n5", "", "n5"}, {"n9", "", ""}, {"", "10.0.0.9:10250", ""},
	} {
		got := n.host(func(l string) string { return map[string]string{"node": c.node, "instance": c.instance}[l] })
		if got != c.want {
			t.Errorf("node %q instance %q: host %q; want %q", c.node, c.instance, got, c.want)
		}
	}
	if k.NodeLabel != 2 || k.Instance != 2 || k.PodNode != 1 || k.KSMOnly != 1 {
		t.Errorf("%+v; want 2 by node label, 2 by instance (1 joined), 1 by kube-state-metrics alone", *k)
	}
	for _, s := range []string{"5 hosts", "2 by cadvisor's node label", "2 by the kubelet's instance only", "1 of them joined", "1 not", "1 nodes by kube-state-metrics alone"} {
		if !strings.Contains(k.Note, s) {
			t.Errorf("the note lacks %q: %s", s, k.Note)
		}
	}
	// A batch of hosts reads only theirs.
	b := n.only([]string{"10.0.0.3:10250"})
	if sels, on := b.selectors(); len(sels) != 2 || on != `node=~"n3"` || !strings.Contains(sels[1], `instance=~"10\\.0\\.0\\.3:10250"`) {
		t.Errorf("selectors %q, %q", sels, on)
	}
}

// TestNamesExporters: a --match with matchers on job or instance names
// node exporters; one on the containers' labels does not.
func TestNamesExporters(t *testing.T) {
	for m, want := range map[string]bool{
		"": false, `{namespace="shop"}`: false, `{namespace="shop", node=~"a.*"}`: false,
		`{job="node"}`: true, `{namespace="shop",instance="x:9100"}`: true, `{instance!="a b"}`: true,
	} {
		if got := namesExporters(m); got != want {
			t.Errorf("%s: %v; want %v", m, got, want)
		}
	}
}
