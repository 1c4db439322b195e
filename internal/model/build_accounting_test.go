package model_test

import (
	"os"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// The unexplained row is MemTotal minus the other rows; its parts are what
// meminfo/vmstat attribute within it, capped at what is left, and the rest
// is not_in_meminfo. The text that explains it names every part's source.
func TestUnexplainedParts(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	s := &sample.Snapshot{}
	for k, v := range map[string]float64{"MemTotal": 16 * gib, "MemFree": 8 * gib, "AnonPages": 2 * gib,
		"Active_file": 1 * gib, "Inactive_file": 1 * gib, "SReclaimable": 256 << 20, "KReclaimable": 320 << 20,
		"SUnreclaim": 128 << 20, "VmallocUsed": 512 << 20, "Zswap": 64 << 20, "MemAvailable": 10 * gib} {
		s.Add("node_memory_"+k+"_bytes", v)
	}
	s.Add("memdoctor_page_size_bytes", 4096)
	s.Add("node_vmstat_nr_memmap_pages", 1024)
	s.Add("node_vmstat_nr_iommu_pages", 2048)
	a := model.Analyze(s, "test").Accounting
	var rest *model.Category
	var known int64
	for i, c := range a.Categories {
		if c.Name == "unexplained" {
			rest = &a.Categories[i]
		} else {
			known += c.Bytes
		}
	}
	if rest == nil {
		t.Fatal("no unexplained row")
	}
	if want := int64(16*gib) - known; rest.Bytes != want {
		t.Fatalf("unexplained %d, want MemTotal − the rest = %d", rest.Bytes, want)
	}
	got := map[string]int64{}
	var sum int64
	for _, p := range rest.Parts {
		got[p.Name] = p.Bytes
		sum += p.Bytes
	}
	for name, want := range map[string]int64{"vmalloc": 512 << 20, "kernel_reclaimable_other": 64 << 20, "zswap_pool": 64 << 20,
		"memmap_runtime": 4 << 20, "iommu_page_tables": 8 << 20} {
		if got[name] != want {
			t.Errorf("part %s = %d, want %d", name, got[name], want)
		}
	}
	if sum != rest.Bytes || got["not_in_meminfo"] != rest.Bytes-(512+64+64+4+8)<<20 {
		t.Errorf("parts sum to %d (not_in_meminfo %d), the row is %d", sum, got["not_in_meminfo"], rest.Bytes)
	}

	// A part larger than what is left is capped: the parts never exceed the row.
	s2 := &sample.Snapshot{}
	s2.Add("node_memory_MemTotal_bytes", 4*gib)
	s2.Add("node_memory_MemFree_bytes", 3*gib)
	s2.Add("node_memory_VmallocUsed_bytes", 2*gib)
	a2 := model.Analyze(s2, "test").Accounting
	for _, c := range a2.Categories {
		if c.Name != "unexplained" {
			continue
		}
		var sum int64
		for _, p := range c.Parts {
			sum += p.Bytes
		}
		if c.Bytes != gib || sum != c.Bytes {
			t.Errorf("capped parts: row %d, parts sum %d, want both 1 GiB", c.Bytes, sum)
		}
	}

	// The explanation (check's text, docs/rules.md) names every source.
	docs, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"VmallocUsed", "KReclaimable", "Zswap", "nr_memmap_pages", "nr_iommu_pages", "alloc_pages", "balloon", "per-CPU", "Unevictable"} {
		if !strings.Contains(model.UnexplainedSource, src) {
			t.Errorf("UnexplainedSource does not mention %s", src)
		}
		if !strings.Contains(string(docs), src) {
			t.Errorf("docs/rules.md does not mention %s", src)
		}
	}
}
