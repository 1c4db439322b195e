package cgroups

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

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

// InHierarchy turns a cgroup path a user gave (as in /proc/PID/cgroup, or
// under /sys/fs/cgroup, or under root) into a path relative to the memory
// hierarchy mounted at root (FS-relative; v1 when the memory controller has
// a v1 hierarchy).
func InHierarchy(q, root string, v1 bool) string {
	rel := q
	if r, ok := strings.CutPrefix(q, "/"+root); ok && (r == "" || strings.HasPrefix(r, "/")) {
		rel = r
	} else if r, ok := strings.CutPrefix(q, "/sys/fs/cgroup"); ok && (r == "" || strings.HasPrefix(r, "/")) && !v1 {
		rel = r
	}
	if rel == "" {
		rel = "/"
	}
	return rel
}

// AnyHierarchyHas says (nil) whether cg, a cgroup path under /sys/fs/cgroup
// or as in /proc/PID/cgroup, is a cgroup directory of any hierarchy (the
// unified one or a v1 controller's), or why not.
func AnyHierarchyHas(fs procfs.FS, cg string) error {
	if strings.HasPrefix(cg, "/sys/fs/cgroup") {
		if !fs.Exists(strings.TrimPrefix(cg, "/")) {
			return fmt.Errorf("--cgroup %s: no such cgroup directory", cg)
		}
		return nil
	}
	// A /proc/PID/cgroup path: a directory under the v2 root or a v1
	// hierarchy's mount.
	dirs := []string{"sys/fs/cgroup" + cg}
	if ents, err := fs.ReadDir("sys/fs/cgroup"); err == nil {
		for _, e := range ents {
			dirs = append(dirs, "sys/fs/cgroup/"+e.Name()+cg)
		}
	}
	for _, d := range dirs {
		if fs.Exists(strings.TrimSuffix(d, "/")) {
			return nil
		}
	}
	return fmt.Errorf("--cgroup %s: no such cgroup (not under /sys/fs/cgroup; see /proc/PID/cgroup for a process' path)", cg)
}
