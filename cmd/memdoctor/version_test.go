package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// `memdoctor version` and `memdoctor --version` print the same line, with
// the Go version this test runs.
func TestVersionCommandAndFlagAgree(t *testing.T) {
	cmdOut, errOut, code := runCLI(t, "version")
	if code != 0 {
		t.Fatalf("version exited %d: %s", code, errOut)
	}
	flagOut, errOut, code := runCLI(t, "--version")
	if code != 0 {
		t.Fatalf("--version exited %d: %s", code, errOut)
	}
	if cmdOut != flagOut {
		t.Errorf("version and --version differ:\n%q\n%q", cmdOut, flagOut)
	}
	if !strings.HasPrefix(cmdOut, "memdoctor ") || !strings.Contains(cmdOut, runtime.Version()) ||
		!strings.Contains(cmdOut, "commit ") || !strings.Contains(cmdOut, "built ") || strings.Count(cmdOut, "\n") != 1 {
		t.Errorf("version line: %q", cmdOut)
	}
	js, _, code := runCLI(t, "version", "--json")
	var p provenance
	if err := json.Unmarshal([]byte(js), &p); code != 0 || err != nil {
		t.Fatalf("version --json: exit %d, %v: %s", code, err, js)
	}
	if p.GoVersion != runtime.Version() || p.Platform != runtime.GOOS+"/"+runtime.GOARCH || p.Version == "" {
		t.Errorf("version --json: %+v", p)
	}
}

// Link-time values win; what they leave empty comes from the toolchain's
// VCS stamp; nothing at all reads "dev"/"unknown".
func TestMergeProvenance(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := mergeProvenance(provenance{}, bi)
	if got.Version != "dev" || got.Commit != "0123456789abcdef0123456789abcdef01234567" || !got.Modified ||
		got.BuildDate != "commit 2026-01-02T03:04:05Z" {
		t.Errorf("from VCS: %+v", got)
	}
	if s := got.String(); !strings.Contains(s, "commit 0123456789ab-modified,") {
		t.Errorf("line: %q", s)
	}
	got = mergeProvenance(provenance{Version: "1.2.3", Commit: "feedface", BuildDate: "2026-02-03T00:00:00Z"}, bi)
	if got.Version != "1.2.3" || got.Commit != "feedface" || got.Modified || got.BuildDate != "2026-02-03T00:00:00Z" {
		t.Errorf("link-time values lost: %+v", got)
	}
	bi.Main.Version = "v0.4.0"
	if got = mergeProvenance(provenance{}, bi); got.Version != "v0.4.0" {
		t.Errorf("module version: %+v", got)
	}
	got = mergeProvenance(provenance{}, nil)
	if got.Version != "dev" || got.Commit != "unknown" || got.BuildDate != "unknown" {
		t.Errorf("nothing known: %+v", got)
	}
}

// `make build` stamps the version, the commit and the build date.
func TestVersionFromMakeBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	root := repoRoot(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "memdoctor")
	before := time.Now().Add(-time.Second)
	if out, err := exec.Command("make", "-s", "-C", root, "build", "OUT="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var p provenance
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if p.Commit != strings.TrimSpace(string(head)) || p.Version == "dev" || p.Version == "" {
		t.Errorf("make build: %+v, HEAD %s", p, head)
	}
	d, err := time.Parse(time.RFC3339, p.BuildDate)
	if err != nil || d.Before(before.Truncate(time.Second)) || d.After(time.Now()) {
		t.Errorf("build date %q (%v): not this build's", p.BuildDate, err)
	}
}

// A plain `go build` in a git checkout takes the commit from the toolchain's
// VCS stamp. The sources are copied into a fresh repository of their own
// (this one may have uncommitted changes, or be a worktree, which the Go
// toolchain does not stamp).
func TestVersionFromPlainGoBuild(t *testing.T) {
	skipShort(t)
	root := repoRoot(t)
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	head := git("rev-parse", "HEAD")
	bin := filepath.Join(dir, "memdoctor-plain")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/memdoctor")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var p provenance
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if p.Commit != head || p.Modified || !strings.HasPrefix(p.BuildDate, "commit ") {
		t.Errorf("plain go build: %+v, want commit %s", p, head)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(line), "commit "+head[:12]+",") {
		t.Errorf("--version: %q %v", line, err)
	}
}
