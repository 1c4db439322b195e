package cgroups

import "strings"

// FocusPaths turns a cgroup given as a path in /proc/PID/cgroup or
// under /sys/fs/cgroup into the paths to match ("" selects nothing).
func FocusPaths(cg string) []string {
	if cg == "" {
		return nil
	}
	cg = "/" + strings.Trim(cg, "/")
	rest, ok := strings.CutPrefix(cg, "/sys/fs/cgroup")
	if !ok {
		return []string{cg}
	}
	rest = "/" + strings.Trim(rest, "/")
	out := []string{rest}
	// cgroup v1: /sys/fs/cgroup/CONTROLLER/path.
	first, path, _ := strings.Cut(rest[1:], "/")
	if v1Controllers[first] {
		out = append(out, "/"+path)
	}
	return out
}

// v1Controllers are the directories of cgroup v1 hierarchies under
// /sys/fs/cgroup.
var v1Controllers = map[string]bool{"memory": true, "cpu": true, "cpuacct": true, "cpu,cpuacct": true, "cpuset": true,
	"pids": true, "blkio": true, "io": true, "devices": true, "freezer": true, "net_cls": true, "net_prio": true,
	"net_cls,net_prio": true, "perf_event": true, "hugetlb": true, "rdma": true, "misc": true, "systemd": true, "unified": true}
