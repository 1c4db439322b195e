package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// startThreadedServer runs testdata/programs/python/threaded_server.py with
// extra environment until the test ends and waits until it answers.
func startThreadedServer(t *testing.T, keep string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command("python3", filepath.Join(repoRoot(t), "testdata", "programs", "python", "threaded_server.py"), strconv.Itoa(port), keep)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("python3: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			return cmd, base
		}
		if time.Now().After(deadline) {
			t.Fatalf("threaded server did not answer on %s: %v", base, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drive sends n requests to url, conc at a time, and fails on any error.
func drive(t *testing.T, url string, n, conc int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	next := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		next <- struct{}{}
	}
	close(next)
	c := &http.Client{Timeout: 60 * time.Second}
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				resp, err := c.Get(url)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		t.Fatalf("driving %s: %v", url, failed)
	}
}

func rssAnon(t *testing.T, pid int) int64 {
	t.Helper()
	st, err := procfs.NewFS("/").ProcStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := st.Get("RssAnon")
	return v
}

func processOf(r *model.Report, pid int) *model.Process {
	for i := range r.Processes {
		if r.Processes[i].PID == pid {
			return &r.Processes[i]
		}
	}
	return nil
}

var arenaCapRE = regexp.MustCompile(`(?:arena_max|MALLOC_ARENA_MAX)=(\d+)`)

// TestThreadedPythonServerArenas: a ThreadingHTTPServer whose requests
// build and drop ~30 MB each keeps hundreds of MiB of freed memory in its
// arenas, fewer arenas than a fixed 16 on a small host. Plain check (no
// --malloc) names it and says what to run to confirm; the same server
// started with MALLOC_ARENA_MAX=2 is seen capped and is never told to set
// a higher cap.
func TestThreadedPythonServerArenas(t *testing.T) {
	if testing.Short() {
		t.Skip("drives two Python servers through 160 requests of ~30 MB each")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 missing")
	}
	binary(t)
	free, freeURL := startThreadedServer(t, "256")
	capped, cappedURL := startThreadedServer(t, "256", "MALLOC_ARENA_MAX=2")
	// The same server keeping no record gives its memory back.
	healthy, healthyURL := startThreadedServer(t, "0")
	drive(t, freeURL+"/work", 160, 8)
	drive(t, cappedURL+"/work", 160, 8)
	drive(t, healthyURL+"/work", 160, 8)
	// Each server keeps only its last 256 records of 4 KiB: the rest is
	// freed memory malloc holds.
	anon := rssAnon(t, free.Process.Pid)
	t.Logf("uncapped server: RssAnon %d MiB; capped at 2: %d MiB", anon>>20, rssAnon(t, capped.Process.Pid)>>20)
	if anon < 256<<20 {
		t.Fatalf("the uncapped server did not retain: RssAnon %d MiB", anon>>20)
	}

	rep := runCheck(t, "--pid", fmt.Sprintf("%d,%d,%d", free.Process.Pid, capped.Process.Pid, healthy.Process.Pid))
	hwho := fmt.Sprintf("(pid %d)", healthy.Process.Pid)
	if hp := processOf(rep, healthy.Process.Pid); hp == nil || hp.MallocArenas == nil {
		t.Errorf("the healthy server %s was not read: %+v", hwho, hp)
	} else {
		t.Logf("healthy server: ~%d arenas, %d MiB anonymous", *hp.MallocArenas, hp.AnonBytes>>20)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Subject, hwho) {
			t.Errorf("the threaded server that gives its memory back %s: %s %s", hwho, f.ID, f.Summary)
		}
	}

	who := fmt.Sprintf("(pid %d)", free.Process.Pid)
	var f *model.Finding
	for i := range rep.Findings {
		if rep.Findings[i].ID == "malloc_arenas_many" && strings.Contains(rep.Findings[i].Subject, who) {
			f = &rep.Findings[i]
		}
	}
	p := processOf(rep, free.Process.Pid)
	if f == nil {
		t.Errorf("plain check says nothing of the threaded server retaining %d MiB %s: %+v", anon>>20, who, p)
	} else {
		t.Logf("%s", f.Summary)
		if want := fmt.Sprintf("memdoctor malloc %d", free.Process.Pid); !strings.Contains(f.Summary, want) {
			t.Errorf("the finding does not say to run %q to confirm: %s", want, f.Summary)
		}
		var cmds []string
		for _, r := range f.Remedies {
			cmds = append(cmds, r.Commands...)
		}
		if !strings.Contains(strings.Join(cmds, "\n"), "arena_max=4") {
			t.Errorf("no arena cap offered to the uncapped server: %q", cmds)
		}
	}

	cp := processOf(rep, capped.Process.Pid)
	if cp == nil {
		t.Fatalf("the capped server pid %d is not in the process table", capped.Process.Pid)
	}
	if cp.ArenaMax == nil || *cp.ArenaMax != 2 {
		t.Errorf("the capped server's arena cap read as %v, want 2 (MALLOC_ARENA_MAX=2)", cp.ArenaMax)
	}
	// With --malloc the allocator's own figures prove the retention; the
	// capped server is still not offered a cap.
	mrep := runCheck(t, "--malloc", "1", "--pid", strconv.Itoa(capped.Process.Pid))
	cwho := fmt.Sprintf("(pid %d)", capped.Process.Pid)
	hoarding := false
	for _, f := range append(rep.Findings, mrep.Findings...) {
		if !strings.Contains(f.Subject, cwho) {
			continue
		}
		hoarding = hoarding || f.ID == "allocator_hoarding"
		text := []string{f.Summary}
		for _, r := range f.Remedies {
			text = append(text, r.Title)
			text = append(text, r.Commands...)
		}
		for _, m := range arenaCapRE.FindAllStringSubmatch(strings.Join(text, "\n"), -1) {
			if n, _ := strconv.Atoi(m[1]); n >= 2 {
				t.Errorf("%s, capped at 2 arenas, is told to set %s: %s", cwho, m[0], f.Summary)
			}
		}
	}
	if !hoarding {
		t.Errorf("check --malloc did not find the capped server %s keeping its freed memory: %v", cwho, mrep.Findings)
	}
}
