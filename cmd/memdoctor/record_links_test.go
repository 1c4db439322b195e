package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second recorder reaching a recording store through another name (a
// hard link, a symbolic link, a linked directory) is refused at once, and
// the first records on undisturbed. Before, the lock was keyed on the
// name: through a hard link or a symbolic link two recorders wrote one
// store, interleaving their samples.
func TestRecordersThroughLinksRefused(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "md.db")
	first := startRecorder(t, db, time.Second) // slow enough for a loaded machine
	other := t.TempDir()
	hard, sym, viaDir := filepath.Join(other, "hard.db"), filepath.Join(other, "sym.db"), filepath.Join(other, "dir", "md.db")
	if err := os.Symlink(db, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Dir(viaDir)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{viaDir, "is being written by"}, // one name, one lock file
		{sym, "symbolic link to " + db},
		{hard, "hard links"},
	} {
		if c.path == hard {
			if err := os.Link(db, hard); err != nil {
				t.Fatal(err)
			}
		}
		second := exec.Command(binary(t), "record", "--db", c.path, "--interval", "1s", "--listen", freeAddr(t))
		start := time.Now()
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = second.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = second.Process.Kill()
			<-done
			t.Fatalf("a second recorder on %s still runs after 5 s:\n%s", c.path, out)
		}
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("a second recorder on %s: %v, want a refusal saying %q:\n%s", c.path, err, c.want, out)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the recorder on %s took %v to refuse", c.path, d)
		}
		t.Logf("%s refused in %v", c.path, time.Since(start).Round(time.Millisecond))
	}
	first.waitHealthy(t, 5*time.Second)
	first.stop(t)
	if log := first.logText(); strings.Contains(log, "clock went back") || strings.Contains(log, "not stored") {
		t.Errorf("the first recorder was disturbed:\n%s", log)
	}
	ts := storedTimes(t, db)
	for i := 1; i < len(ts); i++ {
		if ts[i] <= ts[i-1] {
			t.Fatalf("stored timestamps out of order at %d: another writer wrote the store", i)
		}
	}
	// With the second name gone, the store is recorded into again.
	if err := os.Remove(hard); err != nil {
		t.Fatal(err)
	}
	startRecorder(t, db, time.Second).stop(t)
}
