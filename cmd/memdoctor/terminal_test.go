package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileComm is a process name that clears the screen, opens a CSI with
// the one-byte C1 form (U+009B, read as CSI by UTF-8 terminals), returns
// to the start of the line and ends in DEL and a tab (which would shift
// table columns): 14 bytes, within the kernel's 15. (A newline would be
// shown by /proc/PID/status as "\n" already.)
const hostileComm = "\x1b[2J\u009b31m\r\tev\x7f"

// The test binary doubles as the hostile process: with this variable set it
// renames itself (writing /proc/self/comm renames the thread group leader,
// the name every /proc reader sees) and waits to be read.
func init() {
	if name := os.Getenv("MEMDOCTOR_TEST_HOSTILE_COMM"); name != "" {
		if err := os.WriteFile("/proc/self/comm", []byte(name), 0); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// rawControl returns the first control character in s other than newline,
// or "" when there is none.
func rawControl(s string) string {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f) {
			return strconv.QuoteRune(r)
		}
	}
	return ""
}

// A real process whose name holds terminal escapes: check's text report
// shows the name escaped (visible, on one line) and prints no control
// character; its JSON keeps the exact name.
func TestHostileProcessNameEscaped(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MEMDOCTOR_TEST_HOSTILE_COMM="+hostileComm)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper process did not start: %q", line)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if got, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSuffix(string(got), "\n") != hostileComm {
		t.Fatalf("comm is %q, want %q", got, hostileComm)
	}

	out, errOut, code := runCLI(t, "check", "--pid", pid, "--gc-interval", "0")
	if code != 0 {
		t.Fatalf("check exited %d: %s", code, errOut)
	}
	if c := rawControl(out + errOut); c != "" {
		t.Errorf("check's text printed the control character %s raw", c)
	}
	if want := `\x1b[2J\u009b31m\r\tev\x7f`; !strings.Contains(out, want) {
		t.Errorf("check's text does not show the name escaped as %s:\n%s", want, out)
	}

	out, errOut, code = runCLI(t, "check", "--pid", pid, "--gc-interval", "0", "--json")
	if code != 0 {
		t.Fatalf("check --json exited %d: %s", code, errOut)
	}
	if c := rawControl(out); c != "" {
		t.Errorf("check --json printed the control character %s raw", c)
	}
	var rep struct {
		Processes []struct {
			PID  int    `json:"pid"`
			Comm string `json:"comm"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Processes {
		if strconv.Itoa(p.PID) == pid {
			found = true
			if p.Comm != hostileComm {
				t.Errorf("JSON comm = %q, want the exact name %q", p.Comm, hostileComm)
			}
		}
	}
	if !found {
		t.Errorf("process %s is not in check --json", pid)
	}
}

// Label values from an OpenMetrics file (an instance name that retitles the
// terminal window, a process name with CSI) reach diagnose's text escaped,
// and its JSON exactly.
func TestHostileLabelsEscaped(t *testing.T) {
	inst := "db\x1b]0;pwned\x07\u009b1"
	comm := "java\x1b[8m"
	var b strings.Builder
	b.WriteString("# TYPE node_memory_MemTotal_bytes gauge\n")
	for i := range 3 {
		b.WriteString("node_memory_MemTotal_bytes{instance=\"" + inst + "\"} 8589934592 " + strconv.Itoa(1700000000+600*i) + "\n")
	}
	b.WriteString("# TYPE node_memory_MemAvailable_bytes gauge\n")
	for i := range 3 {
		b.WriteString("node_memory_MemAvailable_bytes{instance=\"" + inst + "\"} 100000000 " + strconv.Itoa(1700000000+600*i) + "\n")
	}
	b.WriteString("# TYPE memdoctor_process_rss_bytes gauge\n")
	for i := range 3 {
		b.WriteString("memdoctor_process_rss_bytes{instance=\"" + inst + "\",pid=\"7\",comm=\"" + comm + "\"} " +
			strconv.Itoa(1<<30*(i+1)) + " " + strconv.Itoa(1700000000+600*i) + "\n")
	}
	b.WriteString("# EOF\n")
	file := filepath.Join(t.TempDir(), "hostile.om")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "diagnose", "--from", file)
	if code != 0 {
		t.Fatalf("diagnose exited %d: %s", code, errOut)
	}
	if c := rawControl(out + errOut); c != "" {
		t.Errorf("diagnose's text printed the control character %s raw:\n%s", c, out)
	}
	if want := `db\x1b]0;pwned\x07\u009b1`; !strings.Contains(out, want) {
		t.Errorf("diagnose's text does not show the instance escaped as %s:\n%s", want, out)
	}
	out, errOut, code = runCLI(t, "diagnose", "--from", file, "--json")
	if code != 0 {
		t.Fatalf("diagnose --json exited %d: %s", code, errOut)
	}
	if c := rawControl(out); c != "" {
		t.Errorf("diagnose --json printed the control character %s raw", c)
	}
	if !strings.Contains(out, `"db\u001b]0;pwned\u0007\u009b1"`) {
		t.Errorf("diagnose --json lost the exact instance name:\n%.2000s", out)
	}

	// An error that quotes the hostile name is escaped too.
	_, errOut, code = runCLI(t, "diagnose", "--from", file, "--instance", "nope\x1b[2J")
	if code == 0 {
		t.Fatal("diagnose of a missing instance succeeded")
	}
	if c := rawControl(errOut); c != "" {
		t.Errorf("the error printed the control character %s raw: %q", c, errOut)
	}
}

// malloc prints the name of the glibc process it reads: a real python3
// (glibc malloc) that renamed itself with prctl(PR_SET_NAME).
func TestHostileNameMalloc(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	script := `import ctypes, sys, time
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(sys.argv[1].encode("utf-8", "surrogateescape")), 0, 0, 0)
print("ready", flush=True)
time.sleep(60)
`
	cmd := exec.Command(py, "-c", script, hostileComm)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("python did not start: %q", line)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	out, errOut, code := runCLI(t, "malloc", pid)
	if code != 0 {
		t.Skipf("malloc %s exited %d (ptrace not allowed here?): %s", pid, code, errOut)
	}
	if c := rawControl(out + errOut); c != "" {
		t.Errorf("malloc printed the control character %s raw", c)
	}
	if want := `\x1b[2J\u009b31m\r\tev\x7f`; !strings.Contains(out, want) {
		t.Errorf("malloc does not show the name escaped as %s:\n%s", want, out)
	}
	out, errOut, code = runCLI(t, "malloc", pid, "--json")
	if code != 0 {
		t.Fatalf("malloc --json exited %d: %s", code, errOut)
	}
	if c := rawControl(out); c != "" {
		t.Errorf("malloc --json printed the control character %s raw", c)
	}
	var rep struct {
		Comm string `json:"comm"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Comm != hostileComm {
		t.Errorf("malloc --json comm = %q (%v), want the exact name %q", rep.Comm, err, hostileComm)
	}
}

// lint names the files it read: a file name is anyone's choice.
func TestHostileFileNameLint(t *testing.T) {
	file := filepath.Join(t.TempDir(), "producer\x1b]0;pwned\x07.properties")
	if err := os.WriteFile(file, []byte("bootstrap.servers=k:9092\nbatch.size=16384\nlinger.ms=0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := runCLI(t, "lint", file)
	if c := rawControl(out + errOut); c != "" {
		t.Errorf("lint printed the control character %s raw:\n%s%s", c, out, errOut)
	}
	if !strings.Contains(out, `producer\x1b]0;pwned\x07.properties`) {
		t.Errorf("lint does not name the file escaped:\n%s%s", out, errOut)
	}
}
