package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// A checkpoint gives back what was written to it by the same scan, drops
// a last line cut short, refuses a line that does not read before it, and
// refuses another scan's file naming what differs.
func TestCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	to := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	scan := CheckpointScan{Source: "http://127.0.0.1:9090", Match: `{job="node"}`, From: to.Add(-14 * 24 * time.Hour), To: to, Step: 300}
	cp, err := OpenCheckpoint(path, scan)
	if err != nil {
		t.Fatal(err)
	}
	f := model.Finding{ID: "dying_cgroups", Severity: model.Critical, Subject: "a\nb host", Summary: "x"}
	batch := []*Instance{
		{Instance: "a\nb", Findings: []model.Finding{f}, Series: 9},
		{Instance: "c", Findings: []model.Finding{}},
		{Instance: "failed", Error: "context canceled"},
	}
	if err := cp.add(batch); err != nil {
		t.Fatal(err)
	}
	if cp.Held() != 2 {
		t.Errorf("held %d, want 2 (a failed instance is not kept)", cp.Held())
	}
	_ = cp.Close()
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = fh.WriteString(`{"instance":"d","find`)
	_ = fh.Close()

	cp, err = OpenCheckpoint(path, scan)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a\nb", "c", "failed", "d"} {
		in := &Instance{Instance: name}
		got := cp.restore(in)
		if want := name == "a\nb" || name == "c"; got != want {
			t.Errorf("%q restored %v, want %v", name, got, want)
		}
		if name == "a\nb" && (len(in.Findings) != 1 || in.Findings[0].Subject != f.Subject || in.Findings[0].Severity != f.Severity || in.Series != 9) {
			t.Errorf("restored %+v", in)
		}
	}
	if err := cp.add([]*Instance{{Instance: "e"}}); err != nil {
		t.Fatal(err)
	}
	_ = cp.Close()
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), `"instance":"d"`) || strings.Count(string(b), "\n") != 4 || !strings.HasSuffix(string(b), "{\"instance\":\"e\",\"findings\":null}\n") {
		t.Errorf("the cut line was not dropped before appending:\n%s", b)
	}

	for _, c := range []struct {
		change func(s *CheckpointScan)
		want   string
	}{
		{func(s *CheckpointScan) { s.Source = "http://127.0.0.1:8428" }, "--prometheus http://127.0.0.1:9090, not http://127.0.0.1:8428"},
		{func(s *CheckpointScan) { s.Match = "" }, `--match "{job=\"node\"}", not ""`},
		{func(s *CheckpointScan) { s.From = s.From.Add(time.Hour) }, "--range 14d, not 13d23h"},
		{func(s *CheckpointScan) { s.Step = 60 }, "--step 5m, not 1m"},
		{func(s *CheckpointScan) { s.All = true }, "--all false, not true"},
	} {
		s := scan
		c.change(&s)
		if _, err := OpenCheckpoint(path, s); err == nil || !strings.Contains(err.Error(), "is of another scan ("+c.want+")") {
			t.Errorf("another scan: %v; want it to name %s", err, c.want)
		}
	}

	// A line that does not read, not at the end, is refused; so is a file
	// that is not a checkpoint.
	bad := strings.Replace(string(b), `{"instance":"c"`, `{"instance":"c`, 1)
	_ = os.WriteFile(path, []byte(bad), 0o600)
	if _, err := OpenCheckpoint(path, scan); err == nil || !strings.Contains(err.Error(), "line 3 is not a judged instance") {
		t.Errorf("a bad line: %v", err)
	}
	_ = os.WriteFile(path, []byte("# HELP x\nx 1\n"), 0o600)
	if _, err := OpenCheckpoint(path, scan); err == nil || !strings.Contains(err.Error(), "is not a fleet scan's checkpoint") {
		t.Errorf("not a checkpoint: %v", err)
	}
}
