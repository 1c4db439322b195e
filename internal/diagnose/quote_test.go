package diagnose_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/seriestest"
)

// TestRemedyCommandsQuoteLabels: a recording whose cgroup paths, unit
// names, process names and pid labels carry shell code (each touches a
// file named after where it hides) makes the cgroup, OOM and leak rules
// fire; every command of theirs that holds one of those names, run by sh
// as uid 65534 in an empty directory, makes no file there, and the names
// that would be read as an option or cannot be printed are not printed.
func TestRemedyCommandsQuoteLabels(t *testing.T) {
	names := map[string]string{
		"unit":    `/system.slice/job$(touch UNIT).service`,
		"quotes":  `/d/it's "$(touch QUOTES)" ` + "`touch TICKS`",
		"dash":    `/system.slice/-$(touch DASH).service`,
		"control": "/d/job\x1b[2J$(touch CONTROL)",
	}
	series := "interval 15m\nmemdoctor_cgroup_info{memory=\"v2\",mode=\"v2\"} 1+0x192\n"
	for _, p := range names {
		l := `{cgroup="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"}`
		series += "memdoctor_cgroup_memory_limit_bytes" + l + " 1073741824+0x192\n" +
			"memdoctor_cgroup_memory_usage_bytes" + l + " 500000000+3145728x192\n" +
			"memdoctor_cgroup_memory_working_set_bytes" + l + " 500000000+3145728x192\n" +
			`memdoctor_cgroup_memory_events_total{cgroup="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `",event="oom_kill"} 0+0x100 1+0x91` + "\n"
	}
	series += `memdoctor_malloc_in_use_bytes{comm="$(touch COMM)",pid="10"} 1e9+5e6x192` + "\n" +
		`memdoctor_process_anon_bytes{comm="$(touch COMM)",pid="10"} 1.1e9+5e6x192` + "\n" +
		`memdoctor_malloc_in_use_bytes{comm="leaky",pid="11;touch PID"} 1e9+5e6x192` + "\n" +
		`memdoctor_process_anon_bytes{comm="leaky",pid="11;touch PID"} 1.1e9+5e6x192` + "\n"
	rep := diagnose.Run(diagnose.Data{Window: seriestest.MustParse(t, series), Source: "test"})

	markers := []string{"UNIT", "QUOTES", "TICKS", "DASH", "CONTROL", "COMM", "PID"}
	ran := map[string]int{}
	for _, f := range rep.Findings {
		for _, rm := range f.Remedies {
			for _, c := range append(append([]string{}, rm.Commands...), rm.Undo) {
				var hit []string
				for _, m := range markers {
					if strings.Contains(c, "touch "+m) {
						hit = append(hit, m)
					}
				}
				if len(hit) == 0 {
					continue
				}
				if !model.Printable(c) {
					t.Errorf("%s: %q cannot be printed", f.ID, c)
				}
				for _, m := range hit {
					ran[m]++
					if m == "CONTROL" || m == "DASH" && strings.HasPrefix(c, "systemctl") {
						t.Errorf("%s: %q prints the name with %s", f.ID, c, m)
					}
				}
				dir := t.TempDir()
				if err := os.Chmod(dir, 0o777); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				sh := exec.CommandContext(ctx, "sh", "-c", "set -u\n"+c)
				sh.Dir = dir
				sh.Env = []string{"PATH=/usr/bin:/bin"}
				sh.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
				_ = sh.Run()
				cancel()
				if es, _ := os.ReadDir(dir); len(es) > 0 {
					t.Errorf("%s: pasting %q made %s: a name ran as shell code", f.ID, c, es[0].Name())
				}
			}
		}
	}
	t.Logf("commands run, by the name they hold: %v", ran)
	for _, m := range []string{"UNIT", "QUOTES", "TICKS", "COMM", "PID"} {
		if ran[m] == 0 {
			t.Errorf("no command names the %s label; findings %+v", m, rep.Findings)
		}
	}
	var sawPlaceholder bool
	for _, f := range rep.Findings {
		if strings.Contains(f.Subject, "CONTROL") {
			for _, rm := range f.Remedies {
				for _, c := range rm.Commands {
					sawPlaceholder = sawPlaceholder || strings.Contains(c, model.Unprintable)
				}
			}
		}
	}
	if !sawPlaceholder {
		t.Errorf("no finding about the cgroup with an escape sequence shows the placeholder")
	}
}
