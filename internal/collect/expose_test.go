package collect_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// TestExpositionPassesPromtool: the /metrics page of a real collection is
// clean for `promtool check metrics` (Debian's prometheus package), except
// for the names node_exporter itself exposes and promtool's linter dislikes:
// meminfo keys are CamelCase (node_memory_MemTotal_bytes), and sysctl and
// vmstat names are the kernel's (node_sysctl_vm_max_map_count ends in
// _count, node_vmstat_nr_sec_page_table_pages has "sec"). Keeping
// node_exporter's names exactly is a design decision (every rule runs on
// data an existing node_exporter collects); anything else promtool reports
// fails the test.
func TestExpositionPassesPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	for _, name := range []string{"dying-cgroups-6.18-x86_64-hybrid", "malloc-arenas-6.18-x86_64-hybrid"} {
		fsys, prov, err := capture.LoadFile(filepath.Join("..", "..", "testdata", "captures", name+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		res, err := collect.Collect(pfs, collect.Options{TopProcesses: 10, TopCgroups: 10, ArenaScan: true})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := sample.WriteText(&buf, &res.Snapshot); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, _ := cmd.CombinedOutput()
		inherited := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			switch {
			case line == "":
			case strings.HasPrefix(line, "node_memory_") && strings.Contains(line, "camelCase"),
				strings.HasPrefix(line, "node_sysctl_vm_"), strings.HasPrefix(line, "node_vmstat_"):
				inherited++
			default:
				t.Errorf("%s: promtool check metrics: %s", name, line)
			}
		}
		if inherited > 40 {
			t.Errorf("%s: %d inherited lint messages, more than node_exporter's names explain", name, inherited)
		}
	}
}
