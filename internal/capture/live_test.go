package capture

import (
	"bytes"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLiveProc records files of the running host and replays them.
func TestLiveProc(t *testing.T) {
	t.Parallel()
	if _, err := os.ReadFile("/proc/meminfo"); err != nil {
		t.Skipf("no readable /proc/meminfo: %v", err)
	}
	rec := NewRecorder(os.DirFS("/"), RecordOptions{})
	want := map[string]string{}
	for _, name := range []string{"proc/meminfo", "proc/self/status", "proc/self/cmdline"} {
		data, err := fs.ReadFile(rec, name)
		if err != nil {
			t.Fatalf("ReadFile(%s): %v", name, err)
		}
		want[name] = string(data)
	}
	want["proc/self/cmdline"] = string(redactCmdline([]byte(want["proc/self/cmdline"])))

	var b bytes.Buffer
	prov := Provenance{PageSize: os.Getpagesize(), Time: time.Now().UTC(), Tool: "capture test"}
	if err := Write(&b, prov, rec.Contents(), WriteOptions{}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	fsys, gotProv, err := Load(&b)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if gotProv.PageSize != prov.PageSize || !gotProv.Time.Equal(prov.Time) || !gotProv.Redacted {
		t.Errorf("provenance = %+v, want %+v redacted", gotProv, prov)
	}
	got := map[string]string{}
	for name := range want {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatalf("replayed ReadFile(%s): %v", name, err)
		}
		got[name] = string(data)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("replay mismatch (-got +want):\n%s", diff)
	}
}
