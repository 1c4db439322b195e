package collect

import (
	"sort"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// allocSitesKept is how many call sites of /proc/allocinfo a scrape keeps:
// the largest by bytes (a kernel has thousands, most of them small).
const allocSitesKept = 40

// collectAllocinfo reads the kernel's allocations by call site
// (/proc/allocinfo: 6.10+ with CONFIG_MEM_ALLOC_PROFILING, root), the
// largest allocSitesKept and the total; nothing where the kernel has no
// such file. It runs with the slab caches, whose growth it explains.
func collectAllocinfo(c *ctx) {
	version, sites, err := c.fs.Allocinfo()
	if err != nil {
		switch {
		case procfs.IsNotExist(err):
		case isPerm(err):
			c.note("proc/allocinfo", "kernel allocations by call site unreadable: permission denied (root only)",
				"which kernel code holds the unreclaimable slab", "run as root")
		default:
			c.note("proc/allocinfo", err.Error(), "which kernel code holds the unreclaimable slab", "")
		}
		return
	}
	var total float64
	for _, s := range sites {
		total += float64(s.Bytes)
	}
	c.add("memdoctor_allocinfo_total_bytes", total, "version", version)
	sort.SliceStable(sites, func(i, j int) bool { return sites[i].Bytes > sites[j].Bytes })
	for i, s := range sites {
		if i >= allocSitesKept || s.Bytes <= 0 {
			break
		}
		c.add("memdoctor_allocinfo_bytes", float64(s.Bytes), "site", s.Site(), "func", s.Func, "module", s.Module)
		c.add("memdoctor_allocinfo_calls", float64(s.Calls), "site", s.Site(), "func", s.Func, "module", s.Module)
	}
}
