package diagnose

// kernel_memory_unexplained: memory that no meminfo category counts.
//
// Mechanism: MemTotal minus every category /proc/meminfo gives (free, anon,
// file LRU, shmem, slab, kernel stacks, page tables, percpu, hugetlb, swap
// cache) leaves the pages the kernel hands out without a counter of their
// own: vmalloc (VmallocUsed), pages drivers take straight from the page
// allocator (alloc_pages: GPU and DMA buffers, network page pools and socket
// data), pages a balloon driver holds without lowering MemTotal, per-CPU
// free lists, mlocked or ramfs page cache, struct pages of hot-added memory
// and IOMMU page tables. On a healthy host that is 1-3 % of MemTotal (0.7 %
// on the development machine: 169 MiB of 23.5 GiB). A large rest is memory
// the other rows cannot show and MemAvailable does not count: a leak
// outside slab (a driver, vmalloc), or memory lent away (a balloon).
//
// Thresholds: warning at 10 % of MemTotal, critical at 25 %, and never
// below 512 MiB.
//
// Known false positives: GPU/RDMA hosts whose drivers legitimately pin
// gigabytes; VMs whose balloon keeps ballooned pages in MemTotal (virtio
// with deflate-on-OOM). A recording tells a leak (growth) from a fixed
// reservation.

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
)

type kernelMemoryUnexplained struct{}

func init() { register(kernelMemoryUnexplained{}) }

func (kernelMemoryUnexplained) Meta() Meta {
	return Meta{ID: "kernel_memory_unexplained", Title: "kernel memory no meminfo category counts",
		Needs:     unexplainedNeeds,
		Charts:    []string{ChartMemoryCategories},
		Prefilter: &Prefilter{About: "the latest MemTotal minus the meminfo categories", Queries: unexplainedQueries, Score: unexplainedScore},
		Doc:       "memory no meminfo category counts (vmalloc, pages drivers take, a balloon) over 10 % of memory (critical over 25 %) and 512 MiB"}
}

// unexplainedNeeds are the categories subtracted from MemTotal: one missing
// would count as unexplained memory. (Percpu, SecPageTables, Hugetlb and
// SwapCached come and go with kernel versions and options; absent, they are
// small or zero.)
var unexplainedNeeds = func() []Need {
	var ns []Need
	for _, k := range []string{"MemTotal", "MemFree", "AnonPages", "Active_file", "Inactive_file", "Shmem",
		"SReclaimable", "SUnreclaim", "KernelStack", "PageTables"} {
		ns = append(ns, Need{"node_memory_" + k + "_bytes", "read /proc/meminfo (node_exporter's meminfo collector)"})
	}
	return ns
}()

func (kernelMemoryUnexplained) Eval(in *Input) []model.Finding {
	if !memoryUsable(in, "kernel_memory_unexplained", false) {
		return nil
	}
	h := in.Host
	a := h.Accounting
	var rest *model.Category
	for i := range a.Categories {
		if a.Categories[i].Name == "unexplained" {
			rest = &a.Categories[i]
		}
	}
	if rest == nil || rest.Bytes < unexplainedMinBytes {
		return nil
	}
	var sev model.Severity
	switch {
	case rest.Percent >= unexplainedCritPct:
		sev = model.Critical
	case rest.Percent >= unexplainedWarnPct:
		sev = model.Warning
	default:
		return nil
	}
	f := model.Finding{ID: "kernel_memory_unexplained", Severity: sev, Subject: "host",
		Summary: fmt.Sprintf("%s (%.1f%% of memory) is held by the kernel outside every meminfo category (slab, page tables, stacks, caches): not available, and not shown by any other row",
			format.Bytes(rest.Bytes), rest.Percent),
		Evidence: []model.Evidence{
			ev("unexplained_bytes", float64(rest.Bytes), "bytes"),
			ev("unexplained_percent_of_total", rest.Percent, "percent"),
		},
	}
	largest := ""
	var lb int64
	for _, p := range rest.Parts {
		f.Evidence = append(f.Evidence, ev(p.Name+"_bytes", float64(p.Bytes), "bytes"))
		if p.Bytes > lb {
			largest, lb = p.Name, p.Bytes
		}
	}
	if largest != "" {
		f.Evidence = append(f.Evidence, evText("largest_part", largest))
	}
	f.Remedies = []model.Remedy{
		{Title: "see which allocator holds it: vmalloc callers, and the page allocator's users",
			Commands: []string{"sudo awk '/pages=/ {s[$3]+=$2} END {for (c in s) print s[c], c}' /proc/vmallocinfo | sort -n -r | head",
				"grep -E 'VmallocUsed|KReclaimable|Unevictable|Mlocked' /proc/meminfo",
				"lsmod | sort -k2 -n -r | head"},
			Risk: "none (read-only)"},
		{Title: "on a VM, ask whether a balloon driver holds it: the hypervisor's balloon target, or `cat /sys/bus/virtio/drivers/virtio_balloon/*/features`",
			Risk: "none (read-only)"},
		{Title: "record it (memdoctor record): a rest that grows with the uptime is a kernel or driver leak; reproduce with page_owner (boot with page_owner=on) on a test host",
			Risk: "page_owner costs memory and some CPU per allocation; not for production"},
	}
	return []model.Finding{f}
}

// The rest in percent of MemTotal from which the rule warns, from which it
// is critical, and the least it fires on.
const (
	unexplainedWarnPct  = 10
	unexplainedCritPct  = 25
	unexplainedMinBytes = 512 << 20
)

// unexplainedQueries: MemTotal minus the needed categories (the optional
// ones left in: the pre-filter may only overestimate), in bytes and in
// percent of MemTotal, for the instances near the thresholds only.
func unexplainedQueries(a PrefilterArgs) []PromQuery {
	last := func(series string) string { return "last_over_time(" + sel(series, a.Match) + "[" + a.Latest() + "])" }
	rest := last(unexplainedNeeds[0].Series)
	for _, n := range unexplainedNeeds[1:] {
		rest += " - " + last(n.Series)
	}
	rest = byInstance(rest)
	return []PromQuery{{"percent", "(100 * " + rest + " / " + byInstance(last("node_memory_MemTotal_bytes")) + " >= " + promNum(unexplainedWarnPct*PrefilterFactor) +
		") and on (instance) (" + rest + " >= " + promNum(unexplainedMinBytes*PrefilterFactor) + ")"}}
}

func unexplainedScore(v PrefilterValues) float64 { return v.V("percent") / unexplainedWarnPct }
