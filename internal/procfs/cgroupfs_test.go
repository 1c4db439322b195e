package procfs

import (
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
