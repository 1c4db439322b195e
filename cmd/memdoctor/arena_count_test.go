package main

// malloc_arenas_many counts the arenas malloc_info counts: a real threaded
// glibc program whose arenas each outgrew one 64 MiB heap (two heaps an
// arena, neighbouring heaps merged into one mapping) is reported with the
// number of arenas `memdoctor malloc` reads from glibc itself, not with its
// heaps; and the arena cap's remedy says when it helps.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// startArenas runs testdata/programs/arenas with threads threads of mib MiB
// each, allowed up to threads+4 arenas, and returns its pid once ready.
func startArenas(t *testing.T, threads, mib int) int {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (apt-get install gcc)")
	}
	src := filepath.Join(repoRoot(t), "testdata", "programs", "arenas.c")
	bin := buildOnce(t, "arenas", func(dir string) (string, error) {
		return gcc(filepath.Join(dir, "arenas"), src, "-O1", "-lpthread")
	})
	cmd := exec.Command(bin, strconv.Itoa(threads), strconv.Itoa(mib))
	cmd.Env = append(os.Environ(), "GLIBC_TUNABLES=glibc.malloc.arena_max="+strconv.Itoa(threads+4))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		ready <- l
	}()
	select {
	case l := <-ready:
		if !strings.HasPrefix(l, "ready ") {
			t.Fatalf("arenas: %q", l)
		}
	case <-time.After(time.Minute):
		t.Fatal("arenas did not get ready")
	}
	return cmd.Process.Pid
}

// arenaFinding runs check on pid and returns its process row and its
// malloc_arenas_many finding.
func arenaFinding(t *testing.T, pid int) (model.Process, *model.Finding) {
	t.Helper()
	rep := runCheck(t, "--pid", strconv.Itoa(pid), "--gc-interval", "0")
	var proc model.Process
	for _, p := range rep.Processes {
		if p.PID == pid {
			proc = p
		}
	}
	if proc.PID != pid {
		t.Fatalf("pid %d not in the report", pid)
	}
	for i, f := range rep.Findings {
		if f.ID == "malloc_arenas_many" && strings.Contains(f.Subject, "(pid "+strconv.Itoa(pid)+")") {
			return proc, &rep.Findings[i]
		}
	}
	t.Fatalf("malloc_arenas_many did not fire for pid %d (arenas %v, anon %d MiB)", pid, proc.MallocArenas, proc.AnonBytes>>20)
	return proc, nil
}

func TestMallocArenasCountedAsMallocInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1.3 GiB in 18 threads")
	}
	requirePtraceHere(t)
	pid := startArenas(t, 18, 72)

	// glibc's own count, through malloc_info.
	out, errOut, code := runMallocCLI(t, "malloc", strconv.Itoa(pid), "--json")
	skipDenied(t, errOut)
	if code != 0 {
		t.Fatalf("malloc exited %d: %s", code, errOut)
	}
	var mi struct {
		Totals struct {
			ArenaCount int64 `json:"arena_count"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &mi); err != nil {
		t.Fatal(err)
	}
	if mi.Totals.ArenaCount < 16 {
		t.Fatalf("malloc_info counts %d arenas, want the program's 18 threads spread over 16 or more", mi.Totals.ArenaCount)
	}

	proc, f := arenaFinding(t, pid)
	if proc.MallocArenas == nil || *proc.MallocArenas != mi.Totals.ArenaCount {
		got := "no"
		if proc.MallocArenas != nil {
			got = strconv.FormatInt(*proc.MallocArenas, 10)
		}
		t.Errorf("check counts %s arenas, malloc_info %d", got, mi.Totals.ArenaCount)
	}
	if want := "~" + strconv.FormatInt(mi.Totals.ArenaCount, 10) + " malloc arenas"; !strings.Contains(f.Summary, want) {
		t.Errorf("summary lacks %q: %s", want, f.Summary)
	}
	notStopped(t, pid)
}

func TestArenaCapRemedySaysWhenItHelps(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1.2 GiB in 18 threads")
	}
	pid := startArenas(t, 18, 64)
	_, f := arenaFinding(t, pid)
	var capRemedy *model.Remedy
	for i, r := range f.Remedies {
		if strings.Contains(strings.Join(r.Commands, " "), "arena_max") {
			capRemedy = &f.Remedies[i]
		}
	}
	if capRemedy == nil {
		t.Fatalf("no arena cap among the remedies: %+v", f.Remedies)
	}
	text := capRemedy.Title + "; " + capRemedy.Risk
	t.Logf("arena cap remedy: %s", text)
	if strings.Contains(text, "did not help") {
		t.Errorf("the remedy says the cap does not help, although it gives back what arenas retain: %s", text)
	}
	for _, want := range []string{"retain", "does not help when"} {
		if !strings.Contains(text, want) {
			t.Errorf("the remedy does not say when it helps and when not (%q): %s", want, text)
		}
	}
}
