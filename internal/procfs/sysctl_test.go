package procfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// sysctlFS is the captured proc/sys/vm plus the two write-only files, which
// fail to read as they do on a live host.
func sysctlFS(t *testing.T) FS {
	t.Helper()
	dir := filepath.Join("testdata", "host", "proc", "sys", "vm")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := fstest.MapFS{"proc/sys/vm/sub/nested": {Data: []byte("1")}}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m["proc/sys/vm/"+e.Name()] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	m["proc/sys/vm/compact_memory"] = &fstest.MapFile{Mode: 0o200}
	m["proc/sys/vm/drop_caches"] = &fstest.MapFile{Mode: 0o200}
	return NewFSFrom(errFS{FS: m, errs: map[string]error{
		"proc/sys/vm/compact_memory": syscall.EACCES,
		"proc/sys/vm/drop_caches":    syscall.EACCES,
	}}, 4096)
}

func TestSysctlVM(t *testing.T) {
	t.Parallel()
	vals, unreadable, err := sysctlFS(t).SysctlVM()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(unreadable, []string{"compact_memory", "drop_caches"}); diff != "" {
		t.Errorf("unreadable mismatch (-got +want):\n%s", diff)
	}
	if len(vals) != 50 {
		t.Errorf("%d values, want 50 (directories skipped)", len(vals))
	}
	got := map[string]string{}
	for _, k := range []string{"min_free_kbytes", "watermark_scale_factor", "watermark_boost_factor", "lowmem_reserve_ratio", "numa_zonelist_order", "stat_refresh"} {
		got[k] = vals[k]
	}
	want := map[string]string{"min_free_kbytes": "67584", "watermark_scale_factor": "10", "watermark_boost_factor": "15000",
		"lowmem_reserve_ratio": "256\t256\t32\t0\t0", "numa_zonelist_order": "Node", "stat_refresh": ""}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("values mismatch (-got +want):\n%s", diff)
	}
	ratios, err := ParseInts(vals["lowmem_reserve_ratio"])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ratios, []int64{256, 256, 32, 0, 0}); diff != "" {
		t.Errorf("ParseInts mismatch (-got +want):\n%s", diff)
	}
}

func TestSysctlVMMissing(t *testing.T) {
	t.Parallel()
	_, _, err := NewFSFrom(fstest.MapFS{}, 4096).SysctlVM()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want not-exist", err)
	}
}

func TestParseInts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []int64
		err  bool
	}{
		{"256 256 32 0 0", []int64{256, 256, 32, 0, 0}, false},
		{" 4096\t-1\n", []int64{4096, -1}, false},
		{"", []int64{}, false},
		{"1 x", nil, true},
		{"1.5", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseInts(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseInts(%q) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseInts(%q) error %v does not wrap ErrMalformed", tt.in, err)
		}
		if diff := cmp.Diff(got, tt.want); !tt.err && diff != "" {
			t.Errorf("ParseInts(%q) mismatch (-got +want):\n%s", tt.in, diff)
		}
	}
}

// The named files read as SysctlVM reads them; one the kernel lacks is
// left out, one it refuses is named.
func TestSysctlVMNamed(t *testing.T) {
	t.Parallel()
	f := sysctlFS(t)
	all, _, err := f.SysctlVM()
	if err != nil {
		t.Fatal(err)
	}
	vals, unreadable := f.SysctlVMNamed([]string{"min_free_kbytes", "lowmem_reserve_ratio", "no_such_knob", "drop_caches"})
	want := map[string]string{"min_free_kbytes": all["min_free_kbytes"], "lowmem_reserve_ratio": all["lowmem_reserve_ratio"]}
	if diff := cmp.Diff(vals, want); diff != "" {
		t.Errorf("values mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(unreadable, []string{"drop_caches"}); diff != "" {
		t.Errorf("unreadable mismatch (-got +want):\n%s", diff)
	}
}
