package main

// The malloc and trim commands against a hostile process (uid 65534, a file
// named like the preload library mapped, answers of its choosing): each
// ends within its --timeout, and on SIGTERM.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/preloadattacktest"
)

// runLimited runs memdoctor with args and kills it after limit.
func runLimited(t *testing.T, limit time.Duration, args ...string) (out string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	start := time.Now()
	timer := time.AfterFunc(limit, func() { _ = cmd.Process.Kill() })
	b, err := cmd.CombinedOutput()
	timer.Stop()
	took = time.Since(start)
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), code, took
}

// A FIFO in place of the dump: malloc --timeout 3s, trim and trim
// --no-pause used to block on it forever.
func TestPreloadAttackFIFOCommands(t *testing.T) {
	requireLinuxRoot(t)
	e := preloadattacktest.New(t)
	pid := fmt.Sprint(e.Start(t, filepath.Join(e.Home, "stats"), "fifo-xml", ""))
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"malloc", pid, "--timeout", "3s"}, false},
		{[]string{"trim", pid, "--timeout", "3s"}, false},
		{[]string{"trim", pid, "--no-pause"}, true},
	} {
		out, code, took := runLimited(t, 10*time.Second, c.args...)
		if took > 5*time.Second || code == -1 {
			t.Errorf("%v: still running after %s (killed)\n%s", c.args, took.Round(time.Millisecond), out)
			continue
		}
		if (code == 0) != c.ok || !c.ok && !strings.Contains(out, "FIFO") {
			t.Errorf("%v: exit %d after %s\n%s", c.args, code, took.Round(time.Millisecond), out)
		}
		if c.ok && !strings.Contains(out, "--apply asks the preload library") {
			t.Errorf("%v: the steps shown are not the library's\n%s", c.args, out)
		}
		t.Logf("%v: exit %d in %s", c.args, code, took.Round(time.Millisecond))
	}
}

// Nobody answers: --timeout ends the wait, and so does SIGTERM.
func TestPreloadAttackSilentCommands(t *testing.T) {
	requireLinuxRoot(t)
	e := preloadattacktest.New(t)
	pid := fmt.Sprint(e.Start(t, filepath.Join(e.Home, "stats"), "silent", ""))
	// (before: the library's own 5 s wait, whatever --timeout said)
	out, code, took := runLimited(t, 10*time.Second, "malloc", pid, "--timeout", "1s")
	if code == 0 || took > 3500*time.Millisecond {
		t.Errorf("malloc --timeout 1s: exit %d after %s\n%s", code, took.Round(time.Millisecond), out)
	}
	t.Logf("malloc --timeout 1s: exit %d after %s", code, took.Round(time.Millisecond))
	cmd := exec.Command(binary(t), "malloc", pid, "--timeout", "1m", "--method", "preload")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("malloc exited 0 after SIGTERM")
		}
		t.Logf("SIGTERM: ended %s later (%v)", time.Since(sent).Round(time.Millisecond), err)
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill()
		t.Error("malloc still running 3 s after SIGTERM")
	}
}

// check reads a preload process' stats file as that process' user: a
// process of uid 65534 that names a file of root's as its MEMDOCTOR_STATS
// does not get root to read it (before, root read it and reported its
// numbers), nor a link in its own directory that points at it.
func TestCheckReadsStatsAsTheProcess(t *testing.T) {
	e := preloadattacktest.New(t)
	secret := filepath.Join(e.Base, "root-stats.jsonl")
	link := filepath.Join(e.Home, "stats.jsonl")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for _, stats := range []string{secret, link} {
		pid := e.Start(t, stats, "silent", "")
		line := fmt.Sprintf(`{"event":"summary","pid":%d,"arenas":3,"mallinfo2":{"arena":777777000,"ordblks":1,"smblks":0,"hblks":0,"hblkhd":0,"usmblks":0,"fsmblks":0,"uordblks":1000,"fordblks":777776000,"keepcost":0}}`+"\n", pid)
		if err := os.WriteFile(secret, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		r := checkJSON(t, "--pid", strconv.Itoa(pid), "--gc-interval", "0")
		for _, p := range r.Processes {
			if p.PID == pid && p.Malloc != nil {
				t.Errorf("MEMDOCTOR_STATS=%s: root read the file for uid %d: %+v", stats, preloadattacktest.UID, p.Malloc)
			}
		}
		noted := false
		for _, n := range r.Notes {
			if strings.Contains(n.Message, "stats are unreadable") && strings.Contains(n.Message, strconv.Itoa(pid)) {
				noted = true
			}
		}
		if !noted {
			t.Errorf("MEMDOCTOR_STATS=%s: no note says the stats were unreadable: %+v", stats, r.Notes)
		}
	}
}
