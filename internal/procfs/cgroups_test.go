package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCgroupsHost(t *testing.T) {
	t.Parallel()
	got, err := hostFS().Cgroups()
	if err != nil {
		t.Fatal(err)
	}
	want := []CgroupSubsys{
		{Name: "cpuset", Hierarchy: 3, NumCgroups: 1, Enabled: true},
		{Name: "cpu", Hierarchy: 1, NumCgroups: 1, Enabled: true},
		{Name: "cpuacct", Hierarchy: 2, NumCgroups: 1, Enabled: true},
		{Name: "blkio", Hierarchy: 7, NumCgroups: 1, Enabled: true},
		{Name: "memory", Hierarchy: 4, NumCgroups: 31, Enabled: true},
		{Name: "devices", Hierarchy: 5, NumCgroups: 1, Enabled: true},
		{Name: "freezer", Hierarchy: 6, NumCgroups: 1, Enabled: true},
		{Name: "net_cls", Hierarchy: 0, NumCgroups: 1, Enabled: true},
		{Name: "perf_event", Hierarchy: 0, NumCgroups: 1, Enabled: true},
		{Name: "net_prio", Hierarchy: 0, NumCgroups: 1, Enabled: true},
		{Name: "hugetlb", Hierarchy: 0, NumCgroups: 1, Enabled: true},
		{Name: "pids", Hierarchy: 8, NumCgroups: 1, Enabled: true},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Cgroups mismatch (-got +want):\n%s", diff)
	}
}

func TestParseCgroups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []CgroupSubsys
	}{
		{"disabled controller", "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t0\t1\t0\n",
			[]CgroupSubsys{{Name: "memory", NumCgroups: 1}}},
		{"dying cgroups counted", "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t4\t182311\t1\n",
			[]CgroupSubsys{{Name: "memory", Hierarchy: 4, NumCgroups: 182311, Enabled: true}}},
		{"no header", "memory\t4\t35\t1\n", []CgroupSubsys{{Name: "memory", Hierarchy: 4, NumCgroups: 35, Enabled: true}}},
		{"extra column", "#subsys_name\thierarchy\tnum_cgroups\tenabled\tnum_dying\nmemory\t4\t35\t1\t30\n",
			[]CgroupSubsys{{Name: "memory", Hierarchy: 4, NumCgroups: 35, Enabled: true, Extra: map[string]int64{"num_dying": 30}}}},
		{"reordered columns", "#subsys_name enabled hierarchy num_cgroups\nmemory 1 4 35\n",
			[]CgroupSubsys{{Name: "memory", Hierarchy: 4, NumCgroups: 35, Enabled: true}}},
		{"header only", "#subsys_name\thierarchy\tnum_cgroups\tenabled\n", []CgroupSubsys{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCgroups([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ParseCgroups mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseCgroupsErrors(t *testing.T) {
	t.Parallel()
	const h = "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"truncated", h + "memory\t4\t35\n", 2},
		{"too many", h + "memory\t4\t35\t1\t9\n", 2},
		{"not a number", h + "memory\t4\tmany\t1\n", 2},
		{"enabled 2", h + "memory\t4\t35\t2\n", 2},
		{"negative hierarchy", h + "memory\t-4\t35\t1\n", 2},
		{"bad header", "#name\thierarchy\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCgroups([]byte(tt.in))
			wantParseError(t, err, "proc/cgroups", tt.line)
		})
	}
}

func FuzzParseCgroups(f *testing.F) {
	addHostile(f, "proc/cgroups")
	f.Add(readTestdata(f, "host/proc/cgroups"))
	f.Add([]byte("#subsys_name enabled x\nmemory 1 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		subs, err := ParseCgroups(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, s := range subs {
			if s.Hierarchy < 0 {
				t.Fatalf("negative hierarchy %+v", s)
			}
		}
		again, _ := ParseCgroups(data)
		if diff := cmp.Diff(subs, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
	})
}
