package cgtrace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestQuietCreatorLeavesTheTable (root, v1 memory controller): the kernel
// side's table holds the creators active since the last Take: this test's
// process, after making and removing ten memory cgroups, is in it at the
// first Take and gone at the second, with nothing done in between.
func TestQuietCreatorLeavesTheTable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tracing needs root")
	}
	mem := MemoryMount("/proc")
	hier := MemoryHierarchyID("/proc")
	if mem == "" || hier <= 0 {
		t.Skip("needs the v1 memory controller")
	}
	parent, err := os.MkdirTemp(mem, "memdoctor-cgtrace-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Remove(parent) }()
	tr, err := Start(context.Background(), Options{Poll: time.Hour, Hierarchy: hier, Method: "bpf"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for i := range 10 {
		d := filepath.Join(parent, fmt.Sprint("quiet-", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	mine := func() (n int) {
		var (
			k cgtraceCreatorKey
			v cgtraceCounts
		)
		for it := tr.bpf.objs.Creators.Iterate(); it.Next(&k, &v); {
			if cstr(k.Comm[:])+"\n" == string(comm) {
				n++
			}
		}
		return n
	}
	s := tr.Take()
	if c := findCreator(s, "cgtrace.test"); c == nil || c.Mkdir != 10 || c.Rmdir != 10 {
		t.Fatalf("first take: %+v", s.Creators)
	}
	if n := mine(); n != 1 {
		t.Fatalf("after the first take this process is %d times in the table, want once", n)
	}
	tr.Take()
	if n := mine(); n != 0 {
		t.Errorf("after a quiet interval this process is still in the table (%d times)", n)
	}
}

func findCreator(s *Summary, comm string) *Creator {
	for i := range s.Creators {
		if s.Creators[i].Comm == comm {
			return &s.Creators[i]
		}
	}
	return nil
}
