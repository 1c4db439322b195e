package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// writeTree writes files (slash paths) below a new directory and returns
// an FS over it.
func writeTree(t *testing.T, files map[string]string) procfs.FS {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs.NewFS(dir)
}

const (
	tmpfsLine  = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	cpuLine    = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	memLine    = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	sdLine     = "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	unified    = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	v2Line     = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
	rootLine   = "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
	badLine    = "99 1 8:1 /x\n"
	joinedLine = "33 23 0:30 / /cgroup/cpu,memory rw,relatime - cgroup cgroup rw,cpu,memory\n"
	spaceLine  = "34 23 0:31 / /srv/cg\\040v2 rw,relatime - cgroup2 cgroup2 rw\n"
)

// TestFindMounts: every layout memdoctor meets, read from mountinfo (and
// the unified root's cgroup.controllers), gives the hierarchy the memory
// controller is on; a malformed line hides only itself.
func TestFindMounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		files       map[string]string
		mode, root  string
		v1, ok      bool
		skipped     int
		v1mem, v2   string
		v2mem       bool
		wantErrText string
	}{
		{name: "v2", files: map[string]string{"proc/self/mountinfo": rootLine + v2Line, "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n"},
			mode: "v2", root: "sys/fs/cgroup", ok: true, v2: "sys/fs/cgroup", v2mem: true},
		{name: "v2 without the memory controller", files: map[string]string{"proc/self/mountinfo": rootLine + v2Line, "sys/fs/cgroup/cgroup.controllers": "cpu io pids\n"},
			mode: "v2", v2: "sys/fs/cgroup"},
		{name: "v1", files: map[string]string{"proc/self/mountinfo": rootLine + tmpfsLine + cpuLine + memLine + sdLine},
			mode: "v1", root: "sys/fs/cgroup/memory", v1: true, ok: true, v1mem: "sys/fs/cgroup/memory"},
		{name: "hybrid", files: map[string]string{"proc/self/mountinfo": rootLine + tmpfsLine + unified + cpuLine + memLine + sdLine, "sys/fs/cgroup/unified/cgroup.controllers": "\n"},
			mode: "hybrid", root: "sys/fs/cgroup/memory", v1: true, ok: true, v1mem: "sys/fs/cgroup/memory", v2: "sys/fs/cgroup/unified"},
		{name: "joined with cpu, elsewhere", files: map[string]string{"proc/self/mountinfo": rootLine + joinedLine},
			mode: "v1", root: "cgroup/cpu,memory", v1: true, ok: true, v1mem: "cgroup/cpu,memory"},
		{name: "an escaped blank, and a bad line", files: map[string]string{"proc/self/mountinfo": badLine + spaceLine, "srv/cg v2/cgroup.controllers": "memory"},
			mode: "v2", root: "srv/cg v2", ok: true, v2: "srv/cg v2", v2mem: true, skipped: 1},
		{name: "none", files: map[string]string{"proc/self/mountinfo": rootLine}, mode: "none"},
		{name: "no mountinfo", files: map[string]string{"proc/cgroups": ""}, mode: "none", wantErrText: "mountinfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, skipped, err := FindMounts(writeTree(t, tc.files))
			if tc.wantErrText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			root, v1, ok := m.Memory()
			if m.Mode() != tc.mode || root != tc.root || v1 != tc.v1 || ok != tc.ok || len(skipped) != tc.skipped ||
				m.V1Memory != tc.v1mem || m.V2 != tc.v2 || m.V2Memory != tc.v2mem {
				t.Errorf("%+v mode %s, memory %q v1 %v ok %v, %d skipped", m, m.Mode(), root, v1, ok, len(skipped))
			}
		})
	}
}

// TestFindMountsLive: on this host the memory hierarchy found is a
// directory holding the controller's usage file.
func TestFindMountsLive(t *testing.T) {
	t.Parallel()
	fs := procfs.NewFS("/")
	m, _, err := FindMounts(fs)
	if err != nil {
		t.Skipf("no mountinfo: %v", err)
	}
	r, ok := m.Reader(fs)
	if !ok {
		t.Skip("no memory cgroup hierarchy mounted")
	}
	usage := "memory.current"
	if r.V1 {
		usage = "memory.usage_in_bytes"
	}
	if m.V2Memory {
		usage = "cgroup.controllers" // the root of v2 has no memory.current
	}
	if !fs.Exists(r.Root + "/" + usage) {
		t.Errorf("%+v: no /%s/%s", m, r.Root, usage)
	}
}
