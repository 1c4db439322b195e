package diagnose

// dying_cgroups: removed memory cgroups that the kernel cannot free.
//
// Mechanism: rmdir of a memory cgroup only takes it offline. Since 3.19 every
// charged page holds a reference on its cgroup, so page cache and shmem
// written by a short-lived job keep the struct mem_cgroup (and its per-node,
// per-CPU state) allocated until those pages are reclaimed or truncated.
// Before 5.3 each dying cgroup also pinned its own copies of every slab cache
// (fixed by reparenting kmem caches in 5.3 and per-object accounting in 5.9);
// page-cache (LRU) pages are still not reparented on 6.x kernels. A host
// that creates a cgroup per job accumulates them: SUnreclaim and Percpu grow,
// memory.stat reads and reclaim slow down (incident 1: hundreds of thousands
// of memory cgroups, 60 GB of unreclaimable slab on 5.0).
//
// Thresholds: warning from 100 dying memory cgroups when they also outnumber
// the live ones (a healthy host has a few dozen at most, from supervisors
// that run each command in its own cgroup); critical from 10 000.
//
// Known false positives: a burst of job completions on a host with plenty of
// cache and no memory pressure; the count falls again when the cache turns
// over. A recording (trend) tells the two apart.

import (
	"fmt"
	"strconv"
	"strings"
)

type dyingCgroups struct{}

func init() { register(dyingCgroups{}) }

func (dyingCgroups) Meta() Meta {
	return Meta{ID: "dying_cgroups", Title: "dying memory cgroups pinned by their page cache",
		Needs: []Need{{"node_cgroups_cgroups", "read /proc/cgroups (v1) or run memdoctor's collector for cgroup v2"}}}
}

// KernelAtLeast reports whether a release string ("5.3.0-26-generic") is at
// least major.minor. Unparseable releases report false.
func KernelAtLeast(release string, major, minor int) bool {
	f := strings.FieldsFunc(release, func(r rune) bool { return r == '.' || r == '-' || r == '+' || r == '_' })
	if len(f) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func (dyingCgroups) Eval(in *Input) []Finding {
	h := in.Host
	if h == nil {
		return nil
	}
	c := h.Cgroups
	if c.MemoryDying == nil {
		return nil
	}
	dying := *c.MemoryDying
	var live int64
	if c.MemoryLive != nil {
		live = *c.MemoryLive
	}
	var sev Severity
	switch {
	case dying >= 10000:
		sev = Critical
	case dying >= 100 && dying > live:
		sev = Warning
	default:
		return nil
	}
	k := h.Info.Kernel
	slabPins := k != "" && !KernelAtLeast(k, 5, 3)
	f := Finding{ID: "dying_cgroups", Severity: sev, Subject: "host",
		Summary: fmt.Sprintf("%d removed memory cgroups are still allocated (%d live): pages charged to them keep them alive", dying, live),
		Evidence: []Evidence{
			ev("memory_cgroups_dying", float64(dying), "count"),
			ev("memory_cgroups_live", float64(live), "count"),
			ev("slab_unreclaimable_bytes", float64(h.Slab.UnreclaimableBytes), "bytes"),
			ev("percpu_bytes", float64(h.Accounting.Category("percpu")), "bytes"),
			evText("memory_hierarchy", c.MemoryHierarchy),
		},
	}
	if k != "" {
		f.Evidence = append(f.Evidence, evText("kernel", k))
		if slabPins {
			f.Evidence = append(f.Evidence, evText("kernel_slab_reparenting", "absent before 5.3: every dying cgroup also pins its own slab caches"))
		} else {
			f.Evidence = append(f.Evidence, evText("kernel_slab_reparenting", "present (5.3+): page cache and shmem are what pin them"))
		}
	}
	root := "/sys/fs/cgroup"
	if c.MemoryHierarchy == "v1" {
		root = "/sys/fs/cgroup/memory"
	}
	f.Remedies = []Remedy{
		{Title: "find who creates and removes cgroups (job runner, systemd transient units, container runtime); reuse a fixed set of cgroups instead of one per job",
			Commands: []string{"find " + root + " -mindepth 1 -maxdepth 3 -type d -newermt '-10 minutes' | head"},
			Risk:     "none (read-only)"},
	}
	if c.MemoryHierarchy == "v1" {
		f.Remedies = append(f.Remedies, Remedy{Title: "before removing a job's cgroup, reclaim what it charged so rmdir frees it at once",
			Commands: []string{"echo 0 > " + root + "/JOB/memory.force_empty && rmdir " + root + "/JOB"},
			Risk:     "reclaims (writes back and drops) the job's page cache; later readers re-read it from disk"})
	} else {
		f.Remedies = append(f.Remedies, Remedy{Title: "before removing a job's cgroup, reclaim what it charged (5.19+)",
			Commands: []string{"cat " + root + "/JOB/memory.current > " + root + "/JOB/memory.reclaim; rmdir " + root + "/JOB"},
			Risk:     "drops the job's page cache; later readers re-read it from disk"})
	}
	f.Remedies = append(f.Remedies,
		Remedy{Title: "have jobs drop the cache of files they will not read again (delete temporary files, or POSIX_FADV_DONTNEED)",
			Risk: "none for other workloads; a change in the job"},
		Remedy{Title: "one-off: drop clean page cache host-wide, which frees the dying cgroups it pinned",
			Commands: []string{"sync", "echo 1 > /proc/sys/vm/drop_caches"},
			Risk:     "every workload re-reads its files from disk afterwards (I/O spike, slower requests for minutes); does not help with dirty, mapped or tmpfs pages; the count grows back"})
	if slabPins {
		f.Remedies = append(f.Remedies, Remedy{Title: "upgrade to kernel 5.3 or later, which reparents slab of removed cgroups",
			Risk: "a kernel upgrade; incident 1 measured unreclaimable slab ~2 GB after a week on 5.3 vs +4 GB/week on 5.0"})
	}
	return []Finding{f}
}
