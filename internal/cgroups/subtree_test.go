package cgroups

import (
	"strings"
	"testing"
)

// TestSubtree: a v1 subtree's directories and tasks are counted below the
// cgroup given, the first three tasks named; past the bound it is an
// error naming it, and a missing cgroup is one too.
func TestSubtree(t *testing.T) {
	t.Parallel()
	fs := writeTree(t, map[string]string{
		"mem/tasks": "1\n", "mem/jobs/tasks": "", "mem/jobs/a/tasks": "10\n11\n", "mem/jobs/b/tasks": "12\n13\n", "mem/jobs/b/c/tasks": "",
	})
	if n, err := CountDirs(fs, "mem/jobs", 10); n != 4 || err != nil {
		t.Errorf("CountDirs = %d, %v; want 4", n, err)
	}
	n, first, err := SubtreeTasks(fs, "mem/jobs", 10)
	if n != 4 || strings.Join(first, ",") != "10,11,12" || err != nil {
		t.Errorf("SubtreeTasks = %d %v %v; want 4 [10 11 12]", n, first, err)
	}
	if n, _, err := SubtreeTasks(fs, "mem/jobs/b/c", 10); n != 0 || err != nil {
		t.Errorf("an empty leaf: %d %v", n, err)
	}
	if _, err := CountDirs(fs, "mem/jobs", 3); err == nil || !strings.Contains(err.Error(), "more than 3 cgroups under /mem/jobs") {
		t.Errorf("CountDirs past its bound: %v", err)
	}
	if _, _, err := SubtreeTasks(fs, "mem/jobs", 2); err == nil || !strings.Contains(err.Error(), "more than 2 cgroups") {
		t.Errorf("SubtreeTasks past its bound: %v", err)
	}
	if _, err := CountDirs(fs, "mem/gone", 10); err == nil {
		t.Error("a missing cgroup counted")
	}
}
