package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// fillCgroup makes a v1 memory cgroup of the test's own with a 64 MiB
// limit and runs in it a python process that fills it by what (anon: 54
// MiB of its own memory; cache: a 256 MiB file read through the page
// cache; tmpfs: a 54 MiB file written to a tmpfs the test mounts in its
// temporary directory; leak: the page cache, then 1 MiB more anon every
// quarter second, 40 MiB in all), then waits. Everything is undone when the test
// ends: the process killed, the tmpfs unmounted, the cgroup removed. It
// returns the cgroup's path in the hierarchy.
func fillCgroup(t *testing.T, what string) string {
	cg, _ := fillCgroupThen(t, what)
	return cg
}

// fillCgroupThen is fillCgroup; for leak, the leak starts when the
// function returned is called.
func fillCgroupThen(t *testing.T, what string) (string, func()) {
	t.Helper()
	const limit = 64 << 20
	name := fmt.Sprintf("memdoctor-oom-%s-%d-%d", what, os.Getpid(), time.Now().UnixNano())
	dir := testCgroup(t, v1Root(t), name, limit)
	var script, trigger string
	switch what {
	case "anon":
		script = `b = bytearray(54 << 20)
for i in range(0, len(b), 4096): b[i] = 1`
	case "cache", "leak":
		p := filepath.Join(t.TempDir(), "big")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for range 256 {
			if _, err := f.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		// the test wrote it: its pages are charged to the test's cgroup
		// until dropped, and the reading in the cgroup charges them there
		script = fmt.Sprintf(`f = open(%q, "rb")
os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
while f.read(1 << 20): pass`, p)
		if what == "leak" {
			// then, once the trigger file is there, 1 MiB of anon
			// every quarter second, 40 MiB in all
			trigger = filepath.Join(filepath.Dir(p), "go")
			script += fmt.Sprintf(`
import threading
held = []
def leak():
    while not os.path.exists(%q): time.sleep(0.05)
    for i in range(40):
        b = bytearray(1 << 20)
        for j in range(0, len(b), 4096): b[j] = 1
        held.append(b)
        time.sleep(0.25)
threading.Thread(target=leak, daemon=True).start()`, trigger)
		}
	case "tmpfs":
		mnt := t.TempDir()
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=128m"); err != nil {
			t.Skipf("cannot mount a tmpfs: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
		script = fmt.Sprintf(`with open(%q, "wb") as f:
    for i in range(54): f.write(b"x" * (1 << 20))`, filepath.Join(mnt, "fill"))
	}
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1"/cgroup.procs && exec python3 -u -c "$2"`, "sh", dir,
		"import os, sys, time\n"+script+"\nprint(\"ready\", flush=True)\ntime.sleep(300)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// registered after the unmount and the removal: runs before them
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the %s filler did not start: %q %v", what, line, err)
	}
	return "/" + name, func() {
		if trigger != "" {
			if err := os.WriteFile(trigger, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCheckOOMDistanceLive: three real v1 memory cgroups at their 64 MiB
// limit, one filled with anonymous memory, one with page cache (a file
// read in it), one with tmpfs written by its process. check --json gives
// each its OOM-relevant memory and distance: the anon and tmpfs ones a few
// MiB from the OOM kill, with a cgroup_oom_imminent finding; the page
// cache one, as full by usage, far from it and quiet. check --cgroup says
// the distance and why the working set, RSS and usage differ.
func TestCheckOOMDistanceLive(t *testing.T) {
	const mib = 1 << 20
	anon, cache, tmpfs := fillCgroup(t, "anon"), fillCgroup(t, "cache"), fillCgroup(t, "tmpfs")
	r := checkJSON(t)
	oomOf := func(cg string) *model.OOMMemory {
		for _, u := range r.Cgroups.Top {
			if u.Cgroup == cg {
				if u.OOM == nil || u.OOM.DistanceBytes == nil {
					t.Fatalf("%s: no OOM-relevant memory or distance in check --json: %+v", cg, u)
				}
				return u.OOM
			}
		}
		t.Fatalf("%s is not among check's cgroups", cg)
		return nil
	}
	fired := func(cg string) bool {
		for _, f := range r.Findings {
			if f.ID == "cgroup_oom_imminent" && f.Subject == "cgroup "+cg {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		cg, what string
		near     bool
	}{{anon, "anon", true}, {tmpfs, "tmpfs", true}, {cache, "page cache", false}} {
		m := oomOf(c.cg)
		d := *m.DistanceBytes
		t.Logf("%s: usage %.1f MiB, working set %.1f MiB, anon %.1f, shmem %.1f, kernel %.1f, page cache %.1f (inactive %.1f): unreclaimable %.1f MiB, to OOM %.1f MiB",
			c.what, float64(m.UsageBytes)/mib, float64(m.WorkingSetBytes)/mib, float64(m.AnonBytes)/mib, float64(m.ShmemBytes)/mib, float64(m.KernelBytes)/mib,
			float64(m.ActiveFileBytes+m.InactiveFileBytes)/mib, float64(m.InactiveFileBytes)/mib, float64(m.UnreclaimableBytes)/mib, float64(d)/mib)
		if m.UsageBytes < 56*mib {
			t.Errorf("%s: usage %d: the cgroup is not full, the case proves nothing", c.what, m.UsageBytes)
		}
		switch {
		case c.near && (d > 64*mib/10 || d < 0):
			t.Errorf("%s: distance %.1f MiB, want under 6.4 MiB (the 54 MiB and the interpreter held, which reclaim cannot take)", c.what, float64(d)/mib)
		case !c.near && d < 32*mib:
			t.Errorf("%s: distance %.1f MiB, want most of the 64 MiB (page cache is reclaimed)", c.what, float64(d)/mib)
		}
		if fired(c.cg) != c.near {
			t.Errorf("%s: cgroup_oom_imminent fired %v, want %v", c.what, fired(c.cg), c.near)
		}
	}
	if m := oomOf(tmpfs); m.ShmemBytes < 54*mib {
		t.Errorf("tmpfs: shmem %d, want the 54 MiB written", m.ShmemBytes)
	}
	out, errOut, code := runCLI(t, "check", "--cgroup", tmpfs)
	if code > 2 {
		t.Fatalf("check --cgroup exit %d: %s", code, errOut)
	}
	for _, want := range []string{"  to OOM: ", "of its limit 64.0 MiB", "  why: usage ", "shmem that no process maps"} {
		if !strings.Contains(out, want) {
			t.Errorf("check --cgroup %s lacks %q:\n%s", tmpfs, want, out)
		}
	}
}

// TestRecordedOOMDistanceDiagnosed: a real v1 cgroup kept at its 64 MiB
// limit by page cache while its process adds 4 MiB of anon a second, recorded
// every 250 ms: diagnose of the recording gives the container its
// distance to the OOM kill and, from the unreclaimable part's growth, the
// time to it, and cgroup_oom_imminent fires critical on it (the kill is
// seconds away).
func TestRecordedOOMDistanceDiagnosed(t *testing.T) {
	const mib = 1 << 20
	leak, start := fillCgroupThen(t, "leak")
	db := filepath.Join(t.TempDir(), "md.db")
	r := startRecorder(t, db, 250*time.Millisecond)
	start()
	time.Sleep(6 * time.Second)
	r.stop(t)
	rep := diagnoseJSON(t, db)
	var m *model.OOMMemory
	for _, u := range rep.Cgroups.Top {
		if u.Cgroup == leak {
			m = u.OOM
		}
	}
	if m == nil || m.DistanceBytes == nil {
		t.Fatalf("diagnose --json: no OOM-relevant memory and distance for %s", leak)
	}
	if m.GrowthBytesPerSecond == nil || m.ETASeconds == nil {
		t.Fatalf("diagnose --json: no growth or time to the OOM kill for %s: %+v", leak, *m)
	}
	g := *m.GrowthBytesPerSecond / mib
	t.Logf("recorded: unreclaimable %.1f MiB, distance %.1f MiB, growth %.2f MiB/s, eta %.1f s", float64(m.UnreclaimableBytes)/mib,
		float64(*m.DistanceBytes)/mib, g, *m.ETASeconds)
	// 4 MiB a second by the clock; the sleeps and a loaded host make it slower, never faster
	if g < 1.5 || g > 4.5 {
		t.Errorf("growth %.2f MiB/s, want about 4 (at most)", g)
	}
	var f *model.Finding
	for i := range rep.Findings {
		if rep.Findings[i].ID == "cgroup_oom_imminent" && rep.Findings[i].Subject == "cgroup "+leak {
			f = &rep.Findings[i]
		}
	}
	if f == nil || f.Severity != model.Critical {
		t.Fatalf("cgroup_oom_imminent on the recording: %+v, want critical", f)
	}
	if eta, ok := evidence(f, "oom_eta_seconds"); !ok || eta > 60 {
		t.Errorf("finding's oom_eta_seconds %v (%v), want seconds", eta, ok)
	}
}
