package store

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// A second writer is refused at once and told who writes; readers read on.
func TestLockOneWriter(t *testing.T) {
	st, path := openTest(t, Options{})
	sc := &sample.Snapshot{Time: t0}
	sc.Add("x", 1)
	if err := st.Append("h", sc); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: got %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refused after %v: should not wait", d)
	}
	for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), "store.test", path + ".lock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if _, err := AcquireLock(path); !errors.Is(err, ErrLocked) {
		t.Errorf("AcquireLock while a writer is open: %v", err)
	}
	// Readers are not locked out, and the writer is not disturbed.
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reader while a writer holds the lock: %v", err)
	}
	defer ro.Close()
	sc2 := &sample.Snapshot{Time: t0.Add(time.Minute)}
	sc2.Add("x", 2)
	if err := st.Append("h", sc2); err != nil {
		t.Fatalf("writer after a refused second writer: %v", err)
	}
	got, err := ro.Select(Query{Names: []string{"x"}})
	if err != nil || len(got) != 1 || len(got[0].Points) != 2 {
		t.Fatalf("reader sees %v, %v: want 2 points", got, err)
	}
	// Closed, the lock is free for the next writer.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("writer after the first closed: %v", err)
	}
	if err := st2.Close(); err != nil {
		t.Fatal(err)
	}
}

// A caller's lock is kept across a close and reopen and stays the caller's.
func TestLockHeldAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	l, err := AcquireLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for range 2 {
		st, err := Open(path, Options{Lock: l})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
			t.Fatalf("between reopens another writer got in: %v", err)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if l2, err := AcquireLock(path); err != nil {
		t.Fatalf("after Release: %v", err)
	} else {
		l2.Release()
	}
}

// Another process holding the lock without naming itself in the file (or
// with a stale name from a dead writer) is found in /proc/locks.
func TestLockHolderFromProcLocks(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) to hold the lock from another process")
	}
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	path := filepath.Join(t.TempDir(), "s.db")
	// A stale text: a writer that died (pid 1 is never ours).
	if err := os.WriteFile(LockPath(path), []byte("pid 1\ncommand memdoctor record\nsince 2020-01-01T00:00:00Z\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(flock, "--exclusive", LockPath(path), "sh", "-c", "echo locked; exec sleep 30")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	buf := make([]byte, 7)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("flock(1) did not take the lock: %q %v", buf, err)
	}
	// flock(1) forks the shell, which inherits the locked descriptor:
	// either pid may be listed as the holder.
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "pid 1 ") || strings.Contains(msg, "2020-01-01") {
		t.Errorf("refusal %q names the stale holder", msg)
	}
	if !strings.Contains(msg, "pid "+strconv.Itoa(holder.Process.Pid)) && !strings.Contains(msg, "(sleep)") {
		t.Errorf("refusal %q does not name flock(1) (pid %d) or its sleep", msg, holder.Process.Pid)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
}

func TestCommandName(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/memdoctor", "record", "--db", "x"}, "memdoctor record"},
		{[]string{"memdoctor", "record", "--scrape", "http://u:secret@h/metrics"}, "memdoctor record"},
		{[]string{"./md", "http://u:secret@h/"}, "md"},
		{nil, "?"},
	} {
		if got := commandName(c.args); got != c.want {
			t.Errorf("commandName(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// A writer is refused a store reached through another name: a symbolic
// link, a hard link (each name had a lock file of its own, so two writers
// wrote one store), a link planted as the lock file (it was followed and
// its target truncated), a device node (its size reads 0: it became a new
// store).
func TestLockRefusesLinks(t *testing.T) {
	st, path := openTest(t, Options{})
	sc := &sample.Snapshot{Time: t0}
	sc.Add("x", 1)
	if err := st.Append("h", sc); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	sym, hard := filepath.Join(other, "sym.db"), filepath.Join(other, "hard.db")
	if err := os.Symlink(path, sym); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(sym, Options{}); !errors.Is(err, ErrLinked) || !strings.Contains(err.Error(), "symbolic link to "+path) {
		t.Errorf("writer through a symbolic link: %v", err)
	}
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hard, path} {
		if _, err := Open(p, Options{}); !errors.Is(err, ErrLinked) || !strings.Contains(err.Error(), "2 hard links") {
			t.Errorf("writer on %s with a second name: %v", p, err)
		}
	}
	// Readers may go through a symbolic link (SQLite resolves it to find
	// the WAL beside the file).
	ro, err := Open(sym, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reader through a symbolic link: %v", err)
	}
	_ = ro.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLock(path); !errors.Is(err, ErrLinked) {
		t.Errorf("lock of a store with two names, no writer: %v", err)
	}
	if err := os.Remove(hard); err != nil {
		t.Fatal(err)
	}

	// A link in the lock file's place is never followed.
	victim := filepath.Join(other, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(LockPath(path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, LockPath(path)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrLinked) || !strings.Contains(err.Error(), "lock file") {
		t.Errorf("writer with a symbolic link as lock file: %v", err)
	}
	if err := os.Remove(LockPath(path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, LockPath(path)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrLinked) {
		t.Errorf("writer with a hard-linked lock file: %v", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Errorf("the lock file's link target was written: %q %v", b, err)
	}
	if err := os.Remove(LockPath(path)); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("writer once the links are gone: %v", err)
	}
	if err := st2.Close(); err != nil {
		t.Fatal(err)
	}

	// A device node is not a store, to write or to read.
	if os.Geteuid() == 0 {
		node := filepath.Join(other, "dev.db")
		if err := syscall.Mknod(node, syscall.S_IFBLK|0o600, 7<<8|200); err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{false, true} {
			if _, err := Open(node, Options{ReadOnly: ro}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("store on a block device (read-only %v): %v", ro, err)
			}
		}
	}
}
