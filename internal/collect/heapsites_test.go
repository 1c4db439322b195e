package collect_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// A process sampling its heap (testdata/programs/leak_workload.c under the
// library with MEMDOCTOR_PROFILE) gets memdoctor_heap_site_in_use_bytes
// per site: the leaking call path named from its own symbols, with the
// bytes the program itself says it leaked (within 10%); the healthy path,
// which frees all it allocates, holds nothing and is not a site.
func TestHeapSitesOfARealProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the profile is read as the process' user)")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	lib, err := preload.Build(context.Background(), preload.BuildOptions{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "leak_workload")
	src, _ := filepath.Abs("../../testdata/programs/leak_workload.c")
	if out, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_PROFILE=64KiB", "MEMDOCTOR_PROFILE_INTERVAL=200ms",
		"MEMDOCTOR_PROFILE_PATH="+filepath.Join(dir, "heap.%p"))
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	if _, err := io.WriteString(in, "leak 40\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outp).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var leaked, healthy int64
	if _, err := fmt.Sscanf(line, "ready leaked=%d healthy_live=%d", &leaked, &healthy); err != nil {
		t.Fatalf("workload said %q", line)
	}
	time.Sleep(600 * time.Millisecond) // a dump after the leak

	res, err := collect.Collect(procfs.NewFS("/"), collect.Options{TopProcesses: 400, ArenaScan: true, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	var sites []string
	var leak float64
	for _, m := range res.Snapshot.Metrics {
		if m.Name != "memdoctor_heap_site_in_use_bytes" || m.Labels.Get("pid") != pid {
			continue
		}
		site := m.Labels.Get("site")
		sites = append(sites, site)
		if strings.HasPrefix(site, "parse_record ← ingest_batch ← worker_main") {
			leak = m.Value
		}
		if strings.Contains(site, "scratch_buffer") {
			t.Errorf("the healthy path is a site: %q = %.0f", site, m.Value)
		}
	}
	if d := leak - float64(leaked); d > 0.1*float64(leaked) || -d > 0.1*float64(leaked) {
		t.Fatalf("parse_record site holds %.0f bytes, the workload leaked %d; sites %q; notes %+v", leak, leaked, sites, res.Notes)
	}
	t.Logf("sites of pid %s: %q", pid, sites)
}
