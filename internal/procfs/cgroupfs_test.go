package procfs

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCgroupInt(t *testing.T) {
	t.Parallel()
	fsys := hostFS()
	got := map[string]int64{}
	for _, name := range []string{"memory.usage_in_bytes", "memory.limit_in_bytes", "memory.max_usage_in_bytes"} {
		v, err := fsys.CgroupInt("sys/fs/cgroup/memory/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = v
	}
	want := map[string]int64{"memory.usage_in_bytes": 210984960, "memory.limit_in_bytes": 9223372036854771712, "memory.max_usage_in_bytes": 2488401920}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("CgroupInt mismatch (-got +want):\n%s", diff)
	}
}

func TestParseCgroupInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
	}{
		{"max\n", -1},
		{"0\n", 0},
		{"536870912\n", 536870912},
		{"-1\n", -1}, // v1 memory.soft_limit style "unset"
		{"  42  ", 42},
	}
	for _, tt := range tests {
		got, err := ParseCgroupInt([]byte(tt.in), "sys/fs/cgroup/a/memory.max")
		if err != nil || got != tt.want {
			t.Errorf("ParseCgroupInt(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "\n", "max max\n", "1 2\n", "12k\n", "MAX\n", "99999999999999999999\n"} {
		_, err := ParseCgroupInt([]byte(bad), "sys/fs/cgroup/a/memory.max")
		wantParseError(t, err, "sys/fs/cgroup/a/memory.max", 1)
	}
}

func FuzzParseCgroupInt(f *testing.F) {
	f.Add(readTestdata(f, "host/sys/fs/cgroup/memory/memory.usage_in_bytes"))
	f.Add(readTestdata(f, "host/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	f.Add([]byte("max\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseCgroupInt(data, "memory.max")
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		// What parses round-trips through its decimal form.
		if v >= 0 {
			back, err := ParseCgroupInt([]byte(strconv.FormatInt(v, 10)+"\n"), "memory.max")
			if err != nil || back != v {
				t.Fatalf("%d does not round-trip: %d, %v", v, back, err)
			}
		}
	})
}

func TestParseCgroupProcs(t *testing.T) {
	got, more, err := ParseCgroupProcs([]byte("1234\n1240\n\n7\n"), "cg/cgroup.procs", 0)
	if err != nil || more || !slices.Equal(got, []int{1234, 1240, 7}) {
		t.Errorf("ParseCgroupProcs = %v, %v, %v", got, more, err)
	}
	if got, more, err := ParseCgroupProcs(nil, "cg/cgroup.procs", 0); err != nil || more || len(got) != 0 {
		t.Errorf("empty cgroup.procs = %v, %v, %v", got, more, err)
	}
	if got, more, err := ParseCgroupProcs([]byte("1\n2\n3\n"), "cg/cgroup.procs", 2); err != nil || !more || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("bounded to 2 = %v, %v, %v", got, more, err)
	}
	for _, bad := range []string{"12a\n", "1\n-4\n", "0\n", "99999999999\n", "1 2\n"} {
		_, _, err := ParseCgroupProcs([]byte(bad), "cg/cgroup.procs", 0)
		wantParseError(t, err, "cg/cgroup.procs", -1)
	}
}

func FuzzParseCgroupProcs(f *testing.F) {
	f.Add([]byte("1234\n1240\n"), 0)
	f.Add([]byte("1\n\n2"), 1)
	f.Add([]byte("x"), 3)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		pids, more, err := ParseCgroupProcs(data, "cgroup.procs", limit)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if limit > 0 && len(pids) > limit || more && (limit <= 0 || len(pids) != limit) {
			t.Fatalf("%d pids (more %v) with limit %d", len(pids), more, limit)
		}
		for _, p := range pids {
			if p <= 0 {
				t.Fatalf("pid %d", p)
			}
		}
	})
}
