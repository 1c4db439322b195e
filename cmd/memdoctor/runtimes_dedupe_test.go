package main

// One process, one set of findings: a runtime read both through its
// --scrape endpoint and directly (a JVM's hsperfdata, a Ruby found in the
// process table) is one runtime, matched by the owner of the endpoint's
// listening socket; a scrape target that is down is noted once.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// runtimesOfPID returns the report's runtimes of one process.
func runtimesOfPID(r *model.Report, pid int) []model.Runtime {
	var out []model.Runtime
	for _, rt := range r.Runtimes {
		if rt.PID == pid || rt.Target == "pid/"+strconv.Itoa(pid) {
			out = append(out, rt)
		}
	}
	return out
}

func TestRuntimeJVMScrapedAndHsperfOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM for ~10 s")
	}
	dir := compileGcWorkload(t)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	jvm := startService(t, url, "java", "-XX:+UseG1GC", "-Xmx160m", "-cp", dir, "GcWorkload", "churn", strconv.Itoa(port))
	pid := jvm.Process.Pid
	time.Sleep(3 * time.Second)
	rep := runCheck(t, "--gc-interval", "3s", "--scrape", url)

	rts := runtimesOfPID(rep, pid)
	if len(rts) != 1 {
		t.Fatalf("pid %d appears as %d runtimes, want 1: %+v", pid, len(rts), rts)
	}
	rt := rts[0]
	other := map[string]string{url: "pid/" + strconv.Itoa(pid), "pid/" + strconv.Itoa(pid): url}[rt.Target]
	if rt.Also != other {
		t.Errorf("the runtime %s does not name its other source %s: also %q", rt.Target, other, rt.Also)
	}
	if rt.Recent == nil {
		t.Errorf("no rates over the interval for %s", rt.Target)
	}
	// Each GC rule at most once for the process, and the churn is found.
	seen := map[string]int{}
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.ID, "gc_") && (strings.Contains(f.Subject, "(pid "+strconv.Itoa(pid)+")") || strings.Contains(f.Subject, url)) {
			seen[f.ID]++
			if !strings.Contains(f.Subject, "(pid "+strconv.Itoa(pid)+")") || !strings.Contains(f.Subject, url) {
				t.Errorf("%s: subject %q does not name both the pid and the URL", f.ID, f.Subject)
			}
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s reported %d times for the one JVM", id, n)
		}
	}
	if seen["gc_old_generation_churn"] == 0 {
		t.Errorf("gc_old_generation_churn did not fire for the churning JVM; findings %+v", rep.Findings)
	}
}

func TestRuntimeScrapedRubyNotNotedHidden(t *testing.T) {
	pid, url := startRuby(t)
	if _, err := httpGet(url); err != nil {
		t.Fatal(err)
	}
	// --top large enough for the small server to be among the processes
	// whose runtime is detected from their mappings
	rep := checkBinary(t, "--scrape", url, "--gc-interval", "0", "--top", "400")
	rts := runtimesOfPID(rep, pid)
	if len(rts) != 1 || rts[0].Source != "scrape" || rts[0].Target != url {
		t.Fatalf("ruby pid %d: runtimes %+v, want one, read through %s", pid, rts, url)
	}
	if rts[0].Also != "pid/"+strconv.Itoa(pid) {
		t.Errorf("the scraped Ruby does not name its process: also %q", rts[0].Also)
	}
	for _, n := range rep.Notes {
		if strings.Contains(n.Message, "without visible GC metrics") && strings.Contains(n.Message, "(pid "+strconv.Itoa(pid)+")") {
			t.Errorf("the scraped Ruby is also noted as without GC metrics: %s", n.Message)
		}
	}
}

func TestRuntimeFailedScrapeNotedOnce(t *testing.T) {
	_, url := startRuby(t)
	dead := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	// the live target makes check read the runtimes a second time
	rep := checkBinary(t, "--scrape", url, "--scrape", dead, "--gc-interval", "1s")
	if len(rep.Runtimes) == 0 {
		t.Fatal("no runtime read: the second reading was not exercised")
	}
	n := 0
	for _, note := range rep.Notes {
		if strings.Contains(note.Source, dead) || strings.Contains(note.Message, dead) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the failed scrape of %s is noted %d times, want once: %+v", dead, n, rep.Notes)
	}
}
