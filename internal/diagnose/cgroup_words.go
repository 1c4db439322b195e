package diagnose

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// cgStall is one cgroup's stall shares, in percent.
type cgStall struct {
	path string
	// some, full: the share over the range, or the snapshot's avg60.
	some, full float64
	// avg10 of "some" on a snapshot; seconds between the two readings and
	// the stall counter's increase over them on a range.
	someAvg10, seconds, someStalled, fullStalled float64
	hasFull, inRange                             bool
	// highEvents: memory.high breaches (this cgroup's own when read),
	// since made or within the range.
	highEvents float64
}

// cgroupStalls reads every cgroup's memory stall: over the newest boot's
// readings of a range when the window has them, else the snapshot's
// averages.
func cgroupStalls(in *Input) []cgStall {
	if in.Window != nil && in.Window.Has("memdoctor_cgroup_memory_pressure_seconds_total") {
		return windowStalls(in.Window)
	}
	if in.Host == nil {
		return nil
	}
	s := in.Host.S
	var out []cgStall
	for _, m := range s.Select("memdoctor_cgroup_memory_pressure_avg60_percent", "kind", "some") {
		p := m.Labels.Get("cgroup")
		c := cgStall{path: p, some: m.Value, someAvg10: s.Value("memdoctor_cgroup_memory_pressure_avg10_percent", "cgroup", p, "kind", "some")}
		if v, ok := s.Get("memdoctor_cgroup_memory_pressure_avg60_percent", "cgroup", p, "kind", "full"); ok {
			c.full, c.hasFull = v, true
		}
		c.highEvents = snapshotHighEvents(s, p)
		out = append(out, c)
	}
	return out
}

// snapshotHighEvents is a cgroup's own memory.high breaches since it was
// made (memory.events.local), else those of its subtree.
func snapshotHighEvents(s *sample.Snapshot, p string) float64 {
	if v, ok := s.Get("memdoctor_cgroup_memory_events_local_total", "cgroup", p, "event", "high"); ok {
		return v
	}
	return s.Value("memdoctor_cgroup_memory_events_total", "cgroup", p, "event", "high")
}

func windowStalls(w *sample.Window) []cgStall {
	sp := model.LastSegment(w)
	var out []cgStall
	for _, sr := range w.Select("memdoctor_cgroup_memory_pressure_seconds_total", "kind", "some") {
		p := sr.Labels.Get("cgroup")
		ps := model.Within(sr, sp)
		if len(ps) < 2 {
			continue
		}
		secs := float64(ps[len(ps)-1].T-ps[0].T) / 1000
		if secs <= 0 {
			continue
		}
		c := cgStall{path: p, inRange: true, seconds: secs, someStalled: model.Increase(ps)}
		c.some = 100 * c.someStalled / secs
		if fs := w.Select("memdoctor_cgroup_memory_pressure_seconds_total", "cgroup", p, "kind", "full"); len(fs) > 0 {
			if fp := model.Within(fs[0], sp); len(fp) >= 2 {
				c.fullStalled, c.hasFull = model.Increase(fp), true
				c.full = 100 * c.fullStalled / secs
			}
		}
		ev := w.Select("memdoctor_cgroup_memory_events_local_total", "cgroup", p, "event", "high")
		if len(ev) == 0 {
			ev = w.Select("memdoctor_cgroup_memory_events_total", "cgroup", p, "event", "high")
		}
		if len(ev) > 0 {
			c.highEvents = model.Increase(model.Within(ev[0], sp))
		}
		out = append(out, c)
	}
	return out
}

// deepest drops each cgroup that has a descendant in the list: PSI is
// hierarchical, and the descendant is where the stall happens.
func deepest(all []cgStall) []cgStall {
	var out []cgStall
	for _, c := range all {
		below := false
		for _, d := range all {
			if d.path != c.path && isBelow(d.path, c.path) {
				below = true
				break
			}
		}
		if !below {
			out = append(out, c)
		}
	}
	return out
}

// cgroupHighSet says whether the cgroup has a memory.high of its own.
func cgroupHighSet(s *sample.Snapshot, p string) bool {
	_, ok := s.Get("memdoctor_cgroup_memory_high_bytes", "cgroup", p)
	return ok
}

// roundUpMiB rounds bytes up to a whole MiB.
func roundUpMiB(b float64) float64 {
	const mib = 1 << 20
	return float64((int64(b) + mib - 1) / mib * mib)
}

func isUnitName(c string) bool {
	return !strings.HasPrefix(c, "-") && model.Printable(c) && strings.HasSuffix(c, ".service") || strings.HasSuffix(c, ".scope") || strings.HasSuffix(c, ".slice")
}

// cgroupOwner is the display name the collector gave a cgroup (its unit,
// pod or container), else its path.
func cgroupOwner(s *sample.Snapshot, p string) string {
	for _, m := range s.Select("memdoctor_cgroup_owner_info", "cgroup", p) {
		if n := m.Labels.Get("name"); n != "" && n != p {
			return n + " (" + p + ")"
		}
	}
	return p
}

// cgroupLimitRemedies: what is in the cgroup, and its limit in the host's
// layout; for a systemd unit, the unit's own property; for a Kubernetes
// pod, its spec.
func cgroupLimitRemedies(s *sample.Snapshot, p, hier string) []model.Remedy {
	if ns, pod, ctr, ok := containerName(s, p); ok {
		return []model.Remedy{{Title: "see what fills it: the container's processes and its memory as the kubelet sees it",
			Commands: []string{fmt.Sprintf("kubectl top pod %s -n %s --containers", kubeName(pod), kubeName(ns)),
				fmt.Sprintf("kubectl describe pod %s -n %s | grep -A3 -E 'Limits|Last State'", kubeName(pod), kubeName(ns))},
			Risk: "none (read-only)"},
			{Title: "if the workload needs this much, raise the container's memory limit in its pod template; else find why it grew (a leak shows as RSS rising across samples)",
				Commands: []string{fmt.Sprintf("kubectl get pod %s -n %s -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}'", kubeName(pod), kubeName(ns)),
					fmt.Sprintf("kubectl set resources <kind>/<owner> -n %s -c %s --limits=memory=<new limit>", kubeName(ns), kubeName(ctr))},
				Risk: "a higher limit lets the container take memory from the rest of the node (and restarts its pods)"}}
	}
	v1 := "/sys/fs/cgroup/memory" + p
	v2 := "/sys/fs/cgroup" + p
	var look, raise []string
	switch hier {
	case "v1":
		look = []string{"cat " + cgFiles(v1, "memory.usage_in_bytes", "memory.limit_in_bytes", "memory.failcnt") + "; grep -E '^total_(rss|cache|inactive_file|active_file) ' " + cgFiles(v1, "memory.stat"),
			fmt.Sprintf("ps -o pid,rss,comm -p $(cat %s | paste -sd,)", cgFiles(v1, "cgroup.procs"))}
	default:
		look = []string{"cat " + cgFiles(v2, "memory.current", "memory.max", "memory.high", "memory.events") + "; grep -E '^(anon|file|inactive_file|active_file) ' " + cgFiles(v2, "memory.stat"),
			fmt.Sprintf("ps -o pid,rss,comm -p $(cat %s | paste -sd,)", cgFiles(v2, "cgroup.procs"))}
	}
	rs := []model.Remedy{{Title: "see what fills it: anonymous memory (the processes' own) or active page cache, and which processes are in it",
		Commands: look, Risk: "none (read-only)"}}
	unit := p[strings.LastIndex(p, "/")+1:]
	switch {
	case strings.Contains(p, "kubepods"):
		raise = []string{"kubectl get pods -A -o json | jq -r '.items[] | select(.metadata.uid == \"<pod uid>\") | .metadata.namespace + \"/\" + .metadata.name'   # the pod uid is in the evidence",
			"kubectl set resources deployment/<name> -n <namespace> --limits=memory=<new limit>"}
	case isUnitName(unit):
		raise = []string{fmt.Sprintf("systemctl show %s -p MemoryMax -p MemoryHigh -p MemoryCurrent", model.ShellArg(unit)),
			fmt.Sprintf("systemctl set-property %s MemoryMax=<new limit>", model.ShellArg(unit))}
	case hier == "v1":
		raise = []string{"echo <new limit in bytes> > " + cgFiles(v1, "memory.limit_in_bytes")}
	default:
		raise = []string{"echo <new limit in bytes> > " + cgFiles(v2, "memory.max")}
	}
	rs = append(rs, model.Remedy{Title: "if the workload needs this much, raise its limit where it is set (the runtime or unit resets a value written by hand); else find why it grew (a leak shows as anon rising across samples)",
		Commands: raise, Risk: "a higher limit lets the cgroup take memory from the rest of the host"})
	return rs
}

// containerName splits the name a Kubernetes container read through
// Prometheus gets (namespace/pod/container, where host cgroups are paths
// from "/"); for a host cgroup, it is the names the runtimes' state gave
// its owner (memdoctor_cgroup_owner_info's namespace, pod and container).
func containerName(s *sample.Snapshot, p string) (ns, pod, ctr string, ok bool) {
	if strings.HasPrefix(p, "/") {
		// A host cgroup: the names the runtimes' state gave its owner.
		for _, m := range s.Select("memdoctor_cgroup_owner_info", "cgroup", p) {
			l := m.Labels
			if l.Get("kind") == "kubernetes" && l.Get("namespace") != "" && l.Get("pod") != "" && l.Get("container") != "" {
				return l.Get("namespace"), l.Get("pod"), l.Get("container"), true
			}
		}
		return "", "", "", false
	}
	parts := strings.Split(p, "/")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// isBelow says whether cgroup d is a descendant of a.
func isBelow(d, a string) bool {
	if a == "/" {
		return d != "/"
	}
	return strings.HasPrefix(d, a+"/")
}
