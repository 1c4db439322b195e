package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/lint"
)

func TestLintCLI(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot(t), "internal", "lint", "testdata", "kafka_producer_batching")
	bad := filepath.Join(dir, "log_shipper_batch20.py")
	good := filepath.Join(dir, "producer_default_batching.properties")

	out, errOut, code := runCLI(t, "lint", "--json", "--fail-on", "warning", bad, good)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (a warning): %s", code, errOut)
	}
	var rep lint.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 2 || len(rep.Findings) != 1 || rep.Findings[0].ID != "kafka_producer_batching" || !strings.HasPrefix(rep.Findings[0].Subject, bad) {
		t.Fatalf("report %+v", rep)
	}
	if rep.Files[0].Format != lint.Python || rep.Files[1].Format != lint.Java || rep.Files[1].Recognised != 2 {
		t.Errorf("files %+v", rep.Files)
	}

	out, _, code = runCLI(t, "lint", good)
	if code != 0 || !strings.Contains(out, "no findings") {
		t.Errorf("good config: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "lint", bad)
	if code != 0 || !strings.Contains(out, "batch_size=65536") || !strings.Contains(out, "[WARNING] kafka_producer_batching") {
		t.Errorf("without --fail-on: exit %d\n%s", code, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lint", filepath.Join(dir, "missing.properties")}, "no such file"},
		{[]string{"lint", "--format", "yaml", good}, "want java, librdkafka or python"},
		{[]string{"lint", "--fail-on", "loud", good}, "--fail-on"},
		{[]string{"lint"}, "requires at least 1 arg"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}
