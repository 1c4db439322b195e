package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckOpensEachFileOnce runs `check` under strace, focused on two
// processes of its own that map the same libc (one with an arena cap in
// its environment), and fails when a file is opened twice: the process'
// environment, a cgroup file, a shared object or an executable. Opening
// is what costs (a /proc file is generated on each open); a second open
// also reads a second, different answer. Two files are opened twice for
// two different readers, and only those: this process' mountinfo (the Go
// runtime reads it before main to size GOMAXPROCS) and the host's libc
// (the glibc version probe reads its banner, the allocator lookup its
// symbols). A Go program serving its /metrics (node_exporter) is focused
// too: check reads its runtime twice, --gc-interval apart, and the second
// reading must not read its maps or its executable again.
func TestCheckOpensEachFileOnce(t *testing.T) {
	requireLinuxRoot(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace (scripts/install-test-deps.sh installs it)")
	}
	bin := binary(t)
	var pids []string
	for _, env := range []string{"", "MALLOC_ARENA_MAX=2"} {
		cmd := exec.Command("sleep", "300")
		if env != "" {
			cmd.Env = append(os.Environ(), env)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
	}
	waitExec(t, pids, "sleep")
	nePID := ""
	if ne, err := exec.LookPath("prometheus-node-exporter"); err == nil {
		port := freePort(t)
		url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
		cmd := startService(t, url, ne, "--collector.disable-defaults", "--collector.meminfo",
			"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
		nePID = strconv.Itoa(cmd.Process.Pid)
		pids = append(pids, nePID)
	} else {
		t.Log("prometheus-node-exporter not installed (scripts/install-test-deps.sh): a Go program's second reading is not checked")
	}

	trace := filepath.Join(t.TempDir(), "trace")
	run := exec.Command(strace, "-f", "-qq", "-y", "-s", "0", "-e", "trace=open,openat", "-o", trace,
		bin, "check", "--json", "--gc-interval", "1s", "--pid", strings.Join(pids, ","))
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("check under strace: %v\n%s", err, stderr.String())
	}

	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	// 1234  openat(AT_FDCWD</x>, "/proc/self/status", O_RDONLY|O_CLOEXEC) = 3</proc/1234/status>
	line := regexp.MustCompile(`^(\d+)\s+open(?:at)?\(.*\)\s+= \d+<(.*)>$`)
	opens := map[string]int{}
	self := ""
	var failed []string // opens that failed, for the message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	// Two threads in a system call at once (check reads the processes
	// beside the rest) print one call in two lines, "openat(... <unfinished
	// ...>" and "<... openat resumed>...) = 5</path>": joined here.
	pending := map[string]string{}
	for sc.Scan() {
		text := sc.Text()
		pid, rest, _ := strings.Cut(text, " ")
		if head, ok := strings.CutSuffix(text, " <unfinished ...>"); ok {
			pending[pid] = head
			continue
		}
		if _, tail, ok := strings.Cut(rest, " resumed>"); ok && strings.HasPrefix(strings.TrimSpace(rest), "<... ") {
			text = pending[pid] + tail
			delete(pending, pid)
		}
		if strings.Contains(text, "= -1 ") {
			failed = append(failed, text)
		}
		m := line.FindStringSubmatch(text)
		if m == nil || strings.Contains(text, "O_DIRECTORY") {
			continue // failed, or a directory listed (not a file read)
		}
		if self == "" {
			self = m[1] // the first line is memdoctor's main thread
		}
		opens[m[2]]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The focused processes were looked at: their environment and the
	// objects they map (so that the test cannot pass by reading nothing).
	for _, pid := range pids {
		if pid == nePID {
			continue
		}
		if opens["/proc/"+pid+"/environ"] == 0 || opens["/proc/"+pid+"/smaps_rollup"] == 0 {
			t.Fatalf("check did not read pid %s's environ and smaps_rollup; opened: %v; failed: %v\n%s", pid, opens, failed, out)
		}
	}
	if nePID != "" {
		// Its runtime was read from its /metrics (so twice), its
		// mappings and executable looked at.
		var rep struct {
			Runtimes []struct {
				Source string
				PID    int
			}
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("check --json: %v\n%s", err, out)
		}
		scraped := false
		for _, r := range rep.Runtimes {
			scraped = scraped || strconv.Itoa(r.PID) == nePID && r.Source == "scrape"
		}
		if !scraped {
			t.Fatalf("node_exporter's runtime (pid %s) was not read from its /metrics: %+v", nePID, rep.Runtimes)
		}
		exe, err := os.Readlink("/proc/" + nePID + "/exe")
		if err != nil {
			t.Fatal(err)
		}
		if opens["/proc/"+nePID+"/maps"] == 0 || opens[exe] == 0 {
			t.Fatalf("check read neither node_exporter's maps nor its executable %s; opened: %v", exe, opens)
		}
	}
	libc, found := "", false
	for p := range opens {
		if filepath.Base(p) == "libc.so.6" {
			libc, found = p, true
		}
	}
	if !found {
		t.Fatalf("check read no libc of the focused processes; opened: %v", opens)
	}
	allowed := map[string]int{"/proc/" + self + "/mountinfo": 2, libc: 2}
	for p, n := range opens {
		want := 1
		if a, ok := allowed[p]; ok {
			want = a
		}
		if n > want {
			t.Errorf("%s opened %d times (at most %d)", p, n, want)
		}
	}
}

// waitExec waits until each pid runs comm (a started child first runs the
// test binary's copy until execve).
func waitExec(t *testing.T, pids []string, comm string) {
	t.Helper()
	for _, pid := range pids {
		for i := 0; ; i++ {
			b, err := os.ReadFile("/proc/" + pid + "/comm")
			if err == nil && strings.TrimSpace(string(b)) == comm {
				break
			}
			if i == 500 {
				t.Fatalf("pid %s never ran %s", pid, comm)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
