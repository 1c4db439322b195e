package collect_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A host with /proc/allocinfo: the 40 largest call sites by bytes are
// recorded with their function and module, and the total of all; a host
// without the file (the real capture's 6.18 kernel has none) records none
// of it and says nothing.
func TestCollectAllocinfo(t *testing.T) {
	t.Parallel()
	plain, err := collectDir(t, copyTree(t))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Snapshot.Has("memdoctor_allocinfo_total_bytes") {
		t.Error("allocinfo series without /proc/allocinfo")
	}
	for _, n := range plain.Notes {
		if strings.Contains(n.Source, "allocinfo") {
			t.Errorf("a note for a kernel without allocinfo: %+v", n)
		}
	}

	dir := copyTree(t)
	var b strings.Builder
	b.WriteString("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n")
	var total int64
	for i := range 60 {
		bytes := int64(i+1) * 4096
		total += bytes
		fmt.Fprintf(&b, "%12d %8d mm/site%d.c:%d func:fn%d \n", bytes, i+1, i, 10+i, i)
	}
	b.WriteString("     1048576      256 fs/xfs/xfs_icache.c:80 [xfs] func:xfs_inode_alloc \n")
	total += 1048576
	if err := os.WriteFile(filepath.Join(dir, "proc", "allocinfo"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := collectDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &res.Snapshot
	if v, ok := s.Get("memdoctor_allocinfo_total_bytes", "version", "1.0"); !ok || v != float64(total) {
		t.Errorf("total %v (%v), want %d", v, ok, total)
	}
	if n := len(s.Select("memdoctor_allocinfo_bytes")); n != 40 {
		t.Errorf("%d call sites recorded, want the 40 largest", n)
	}
	if v, ok := s.Get("memdoctor_allocinfo_bytes", "site", "fs/xfs/xfs_icache.c:80", "func", "xfs_inode_alloc", "module", "xfs"); !ok || v != 1048576 {
		t.Errorf("the largest site: %v (%v)", v, ok)
	}
	if v, ok := s.Get("memdoctor_allocinfo_calls", "site", "mm/site59.c:69", "func", "fn59", "module", ""); !ok || v != 60 {
		t.Errorf("calls of mm/site59.c:69: %v (%v)", v, ok)
	}
	if _, ok := s.Get("memdoctor_allocinfo_bytes", "site", "mm/site0.c:10", "func", "fn0", "module", ""); ok {
		t.Error("a site below the 40 largest recorded")
	}
}
