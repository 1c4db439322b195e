package heapprof

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// The profile memdoctor writes is read by pprof's own library as written:
// sample types, period, time, each stack's values and its functions named
// from a running PIE's symbols, their mapping, and a frame in no mapping
// kept as a bare address.
func TestProfileReadByPprof(t *testing.T) {
	bin, pid, addr := startPIE(t, "sites", `#include <stdio.h>
__attribute__((noinline)) void alloc_site_one(void) { puts("1"); }
__attribute__((noinline)) void alloc_site_two(void) { puts("2"); }
int main(void) { printf("%p %p\n", (void *)alloc_site_one, (void *)alloc_site_two); fflush(stdout); getchar(); return 0; }
`)
	if len(addr) != 2 {
		t.Fatalf("program said %#x", addr)
	}
	dir := t.TempDir()
	maps, err := procfs.NewFS("/").ProcMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	one, two := addr[0]+4, addr[1]+4 // return addresses inside them
	d := &Dump{PID: pid, Rate: 524288, Time: time.Unix(1795558814, 764401204), Maps: maps, Stacks: []Stack{
		{AllocObjects: 3, AllocBytes: 3 << 20, InUseObjects: 2, InUseBytes: 2 << 20, PCs: []uint64{one, two}},
		{AllocObjects: 1, AllocBytes: 600000, PCs: []uint64{two, 8}},
	}}
	sym := NewSymbolizer(func(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) })
	var buf bytes.Buffer
	if err := Profile(sym, d).Write(&buf); err != nil {
		t.Fatal(err)
	}
	// The pprof tool reads it too, and ranks alloc_site_one first by the
	// bytes in use (the default sample type).
	if gobin, err := exec.LookPath("go"); err == nil {
		pb := filepath.Join(dir, "heap.pb.gz")
		if err := os.WriteFile(pb, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(gobin, "tool", "pprof", "-top", pb).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof -top: %v\n%s", err, out)
		}
		if i := strings.Index(string(out), "alloc_site_one"); i < 0 || strings.Contains(string(out[:i]), "alloc_site_two") {
			t.Errorf("go tool pprof -top: want alloc_site_one first:\n%s", out)
		}
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("pprof cannot read it: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("pprof finds it invalid: %v", err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if got := strings.Join(types, " "); got != "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" {
		t.Errorf("sample types %s", got)
	}
	if p.DefaultSampleType != "inuse_space" || p.Period != 524288 || p.PeriodType == nil || p.PeriodType.Type != "space" ||
		p.PeriodType.Unit != "bytes" || p.TimeNanos != d.Time.UnixNano() {
		t.Errorf("header: default %q, period %d %+v, time %d", p.DefaultSampleType, p.Period, p.PeriodType, p.TimeNanos)
	}
	if len(p.Sample) != 2 {
		t.Fatalf("%d samples, want 2", len(p.Sample))
	}
	stack := func(s *profile.Sample) string {
		var fs []string
		for _, l := range s.Location {
			name := "?"
			if len(l.Line) > 0 {
				name = l.Line[0].Function.Name
				if l.Line[0].Function.SystemName != name {
					t.Errorf("%s: system name %q", name, l.Line[0].Function.SystemName)
				}
			}
			if l.Mapping != nil {
				if l.Mapping.File != bin || !l.Mapping.HasFunctions || l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit {
					t.Errorf("%s at %#x: mapping %+v", name, l.Address, l.Mapping)
				}
			}
			fs = append(fs, name+"@"+strconv.FormatUint(l.Address, 16))
		}
		return strings.Join(fs, " ")
	}
	for i, want := range []struct {
		stack  string
		values []int64
	}{
		{"alloc_site_one@" + strconv.FormatUint(one, 16) + " alloc_site_two@" + strconv.FormatUint(two, 16), []int64{3, 3 << 20, 2, 2 << 20}},
		{"alloc_site_two@" + strconv.FormatUint(two, 16) + " 0x8@8", []int64{1, 600000, 0, 0}},
	} {
		s := p.Sample[i]
		if got := stack(s); got != want.stack {
			t.Errorf("sample %d: stack %s, want %s", i, got, want.stack)
		}
		if len(s.Value) != 4 || s.Value[0] != want.values[0] || s.Value[1] != want.values[1] || s.Value[2] != want.values[2] || s.Value[3] != want.values[3] {
			t.Errorf("sample %d: values %v, want %v", i, s.Value, want.values)
		}
	}
	// One location per address and one function per name: the second
	// stack's alloc_site_two is the first's.
	if len(p.Location) != 3 || len(p.Function) != 3 || len(p.Mapping) != 1 {
		t.Errorf("%d locations, %d functions, %d mappings; want 3, 3, 1", len(p.Location), len(p.Function), len(p.Mapping))
	}
}
