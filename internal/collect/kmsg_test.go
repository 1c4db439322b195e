package collect

import (
	"bytes"
	"io/fs"
	"regexp"
	"testing"
	"testing/fstest"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// withVmstat serves proc/vmstat from data, everything else from fs.FS.
type withVmstat struct {
	fs.FS
	data []byte
}

func (w withVmstat) Open(name string) (fs.File, error) {
	if name == "proc/vmstat" {
		return fstest.MapFS{name: {Data: w.data}}.Open(name)
	}
	return w.FS.Open(name)
}

// The kernel log is read for its OOM-kill reports only when the kernel
// counted an OOM kill since boot: a real capture (three reports in its
// log, oom_kill 1) gives them, and the same host with oom_kill 0 does not
// read the log at all.
func TestKmsgReadOnlyAfterAnOOMKill(t *testing.T) {
	t.Parallel()
	const base = "../../testdata/captures/cgroups-quiet-6.1-x86_64-v2"
	fsys, prov, err := capture.LoadFile(base + ".txtar")
	if err != nil {
		t.Fatal(err)
	}
	vmstat, err := fs.ReadFile(fsys, "proc/vmstat")
	if err != nil {
		t.Fatal(err)
	}
	oomKill := regexp.MustCompile(`(?m)^oom_kill \d+$`)
	if !oomKill.Match(vmstat) {
		t.Fatalf("the capture's vmstat has no oom_kill line")
	}
	run := func(fsys fs.FS) int {
		opt := Options{KmsgPath: base + ".kmsg"}
		opt.defaults()
		c := &ctx{fs: procfs.NewFSFrom(fsys, prov.PageSize), opt: opt, res: &Result{}}
		if err := collectVmstat(c); err != nil {
			t.Fatal(err)
		}
		if err := collectKmsg(c); err != nil {
			t.Fatal(err)
		}
		return len(c.res.Snapshot.Select("memdoctor_kmsg_oom_kill_seconds"))
	}
	if n := run(fsys); n == 0 {
		t.Fatalf("no OOM-kill report read from %s.kmsg with oom_kill counted", base)
	}
	none := withVmstat{fsys, oomKill.ReplaceAll(bytes.Clone(vmstat), []byte("oom_kill 0"))}
	if n := run(none); n != 0 {
		t.Errorf("%d OOM-kill reports read from the log of a kernel that counted no OOM kill", n)
	}
}
