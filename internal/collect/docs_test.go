package collect_test

// docs/metrics.md lists every series memdoctor produces; this test collects
// every real capture and fails on a name the document does not cover, so the
// document cannot drift from the code.

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

func TestMetricsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Documented names are the `code` spans in the first cell of table
	// rows; * is a wildcard.
	var patterns []string
	span := regexp.MustCompile("`([a-zA-Z_:*0-9]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range span.FindAllStringSubmatch(cells[1], -1) {
			patterns = append(patterns, m[1])
		}
	}
	if len(patterns) < 20 {
		t.Fatalf("docs/metrics.md lists only %d names", len(patterns))
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "captures", "*.txtar"))
	seen := map[string]bool{}
	for _, f := range files {
		fsys, prov, err := capture.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		root := 0
		for _, opt := range []collect.Options{{TopProcesses: 5, TopCgroups: 5, ArenaScan: true},
			{TopProcesses: 5, UserTotals: true, Focus: collect.ProcessFocus{UID: &root}}} {
			res, err := collect.Collect(pfs, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Snapshot.Metrics {
				seen[m.Name] = true
			}
		}
	}
	for name := range seen {
		ok := false
		for _, p := range patterns {
			if m, _ := path.Match(p, name); m || p == name {
				ok = true
				break
			}
		}
		if !ok && !strings.HasPrefix(name, "go_") {
			t.Errorf("series %s is not in docs/metrics.md", name)
		}
	}
}
