package cgtrace

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// rawEvent builds a BPF record as the kernel side writes it.
func rawEvent(op Op, pid int, comm, path string, id uint64, hier int) []byte {
	b := make([]byte, eventSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[offOp:], uint32(op))
	ne.PutUint32(b[offPID:], uint32(pid))
	ne.PutUint32(b[offPPID:], 1)
	ne.PutUint64(b[offCgroupID:], id)
	ne.PutUint32(b[offHierarchy:], uint32(int32(hier)))
	copy(b[offComm:offComm+commLen-1], comm)
	copy(b[offPath:offPath+pathLen-1], path)
	return b
}

// TestAddRawRemovalAllocatesNothing: once a process is known, counting the
// removal of a memory cgroup the trace saw made allocates nothing (its path
// is already named), and the path stays known.
func TestAddRawRemovalAllocatesNothing(t *testing.T) {
	a := newAggregator(Options{Hierarchy: -1, Proc: t.TempDir()})
	a.memHier = 7
	mk := rawEvent(Mkdir, 4242, "runner", "/jobs/job-1", 1001, 7)
	rm := rawEvent(Rmdir, 4242, "runner", "/jobs/job-1", 1001, 7)
	a.addRaw(mk) // the process' first event builds its creator
	if n := testing.AllocsPerRun(100, func() { a.addRaw(rm) }); n != 0 {
		t.Errorf("%v allocations per removal, want 0", n)
	}
	if p := a.memcgs.known(1001); p != "/jobs/job-1" {
		t.Errorf("cgroup 1001 named %q", p)
	}
	s := a.summary("bpf", 0, 0)
	if len(s.Creators) != 1 || s.Creators[0].Mkdir != 1 || s.Creators[0].Rmdir != 101 {
		t.Errorf("creators %+v, want runner with 1 mkdir and 101 rmdir", s.Creators)
	}
}

// BenchmarkAddRaw: the reader's work per record of a known process, new
// cgroups made and removed in turn.
func BenchmarkAddRaw(b *testing.B) {
	a := newAggregator(Options{Hierarchy: -1, Proc: b.TempDir()})
	a.memHier = 5
	var evs [][]byte
	for i := range 4096 {
		p := fmt.Sprintf("/memdoctor-bench/job-%d", i)
		evs = append(evs, rawEvent(Mkdir, 1, "runner", p, uint64(100000+i), 5), rawEvent(Rmdir, 1, "runner", p, uint64(100000+i), 5))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a.addRaw(evs[i%len(evs)])
		i++
	}
}
