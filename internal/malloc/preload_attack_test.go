package malloc

// Attacks on the preload request path by a real unprivileged process
// (internal/preloadattacktest: uid 65534, a file named like the library mapped,
// MEMDOCTOR_STATS and answers of its choosing). memdoctor runs as root here.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/preloadattacktest"
)

// bounded runs f and fails the test when it does not return within limit
// (the call is then left behind: it is what the test found).
func bounded[T any](t *testing.T, limit time.Duration, f func() (T, error)) (T, time.Duration, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	start := time.Now()
	c := make(chan result, 1)
	go func() {
		v, err := f()
		c <- result{v, err}
	}()
	select {
	case r := <-c:
		return r.v, time.Since(start), r.err
	case <-time.After(limit):
		t.Fatalf("still running after %s: hung", limit)
	}
	var zero T
	return zero, 0, nil
}

// A stats directory that is a symlink to a directory of root: root must
// not create its request there (before: a file of the attacker's in it).
func TestPreloadAttackSymlinkedDir(t *testing.T) {
	e := preloadattacktest.New(t)
	link := filepath.Join(e.Home, "link")
	if err := os.Symlink(e.Victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, preloadattacktest.UID, preloadattacktest.UID); err != nil {
		t.Fatal(err)
	}
	// claim: it writes over a request file it was given, so that root's
	// withdrawal (which removes only its own request) leaves it there.
	pid := e.Start(t, filepath.Join(link, "stats"), "claim", "")
	ctx := context.Background()
	opt := Options{Method: MethodPreload, Timeout: 2 * time.Second}
	_, _, err := bounded(t, 10*time.Second, func() (*Report, error) { return Inspect(ctx, pid, opt) })
	if err == nil || !errors.Is(err, ErrPreload) {
		t.Errorf("inspect: %v, want a refusal", err)
	}
	_, _, err = bounded(t, 10*time.Second, func() (*TrimResult, error) { return Trim(ctx, pid, opt) })
	if err == nil {
		t.Error("trim: no error")
	}
	if got := preloadattacktest.Entries(t, e.Victim); len(got) != 0 {
		t.Errorf("root's directory %s now holds %v", e.Victim, got)
	}
	t.Logf("refused: %v", err)
}

// An answer naming another file as its dump: not read, whether it names
// root's file absolutely, relatively, or through a symlink in place of
// the dump.
func TestPreloadAttackAnswerNamesRootFile(t *testing.T) {
	e := preloadattacktest.New(t)
	rel, err := filepath.Rel(e.Home, e.Secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, extra string
		env         []string
	}{
		{"absolute", `,"xml":"` + e.Secret + `"`, nil},
		{"relative", `,"xml":"` + rel + `"`, nil},
		{"proc", `,"xml":"/proc/1/environ"`, nil},
		{"symlink", "", []string{"LINK=" + e.Secret}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stats := filepath.Join(e.Home, "stats-"+c.name)
			pid := e.Start(t, stats, "answer", c.extra, c.env...)
			rep, _, err := bounded(t, 10*time.Second, func() (*Report, error) {
				return Inspect(context.Background(), pid, Options{Method: MethodPreload, Timeout: 5 * time.Second})
			})
			if rep != nil && bytes.Contains(rep.XML, []byte(preloadattacktest.Marker)) {
				t.Fatalf("root's file was read and reported: %d arenas, retained %d", rep.Totals.ArenaCount, rep.Totals.RetainedBytes)
			}
			if err == nil || !errors.Is(err, ErrPreload) {
				t.Fatalf("got %v, want a refusal", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// A FIFO where the dump or the stats file should be: refused at once
// (before: open blocked forever, whatever --timeout said).
func TestPreloadAttackFIFO(t *testing.T) {
	e := preloadattacktest.New(t)
	for _, mode := range []string{"fifo-xml", "fifo-stats"} {
		t.Run(mode, func(t *testing.T) {
			pid := e.Start(t, filepath.Join(e.Home, "stats-"+mode), mode, "")
			opt := Options{Method: MethodPreload, Timeout: 3 * time.Second}
			_, took, err := bounded(t, 8*time.Second, func() (*Report, error) { return Inspect(context.Background(), pid, opt) })
			if err == nil || took > 4*time.Second {
				t.Errorf("inspect: %v after %s, want a refusal within the 3 s timeout", err, took)
			}
			t.Logf("inspect: %v (%s)", err, took.Round(time.Millisecond))
			if mode == "fifo-stats" {
				return // its stats file is a FIFO now: the requests below go unanswered
			}
			// trim's dry run reads the dump; --no-pause asks nothing.
			for _, noPause := range []bool{false, true} {
				_, took, err = bounded(t, 8*time.Second, func() (*TrimEstimate, error) {
					return Estimate(context.Background(), pid, opt, noPause)
				})
				if (err == nil) != noPause || took > 4*time.Second {
					t.Errorf("trim estimate (no pause %v): %v after %s", noPause, err, took)
				}
			}
		})
	}
}

// Nobody answers: Inspect ends at --timeout (before: the library's 5 s
// wait, whatever --timeout said), and at once when the context ends.
func TestPreloadAttackTimeout(t *testing.T) {
	e := preloadattacktest.New(t)
	pid := e.Start(t, filepath.Join(e.Home, "stats"), "silent", "")
	_, took, err := bounded(t, 10*time.Second, func() (*Report, error) {
		return Inspect(context.Background(), pid, Options{Method: MethodPreload, Timeout: time.Second})
	})
	if !errors.Is(err, ErrPreload) || took > 2*time.Second {
		t.Errorf("--timeout 1s: %v after %s", err, took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, took, err = bounded(t, 10*time.Second, func() (*Report, error) {
		return Inspect(ctx, pid, Options{Method: MethodPreload, Timeout: time.Minute})
	})
	if err == nil || took > time.Second {
		t.Errorf("cancelled after 300 ms: %v after %s", err, took)
	}
	// Withdrawn both times.
	if _, err := os.Lstat(filepath.Join(e.Home, "stats.request")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("request left behind: %v", err)
	}
}

// trim --no-pause touches nothing: no request, even to a library.
func TestEstimateNoPauseSendsNoRequest(t *testing.T) {
	e := preloadattacktest.New(t)
	pid := e.Start(t, filepath.Join(e.Home, "stats"), "silent", "")
	est, took, err := bounded(t, 10*time.Second, func() (*TrimEstimate, error) {
		return Estimate(context.Background(), pid, Options{}, true)
	})
	if err != nil {
		t.Fatalf("%v after %s", err, took)
	}
	if est.Source != "smaps" || est.UpperBoundBytes == nil {
		t.Errorf("source %s: want the /proc upper bound", est.Source)
	}
	for _, n := range preloadattacktest.Entries(t, e.Home) {
		if n != "stats" {
			t.Errorf("%s was created next to the stats file", n)
		}
	}
}

// The real library in a process of another user: asked as that user, it
// answers (it can remove the request file memdoctor created for it).
func TestPreloadOtherUser(t *testing.T) {
	e := preloadattacktest.New(t)
	lib := buildPreload(t)
	bin := build(t, false)
	for _, f := range []string{lib, bin} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.Base, "lib", filepath.Base(f)), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stats := filepath.Join(e.Home, "stats.%p")
	cmd := exec.Command(filepath.Join(e.Base, "lib", filepath.Base(bin)), "hoard", "2", "16")
	cmd.Env = []string{"LD_PRELOAD=" + filepath.Join(e.Base, "lib", filepath.Base(lib)), "MEMDOCTOR_STATS=" + stats}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: preloadattacktest.UID, Gid: preloadattacktest.UID}}
	w := startCmd(t, cmd)
	rep, err := Inspect(context.Background(), w.pid, Options{Method: MethodPreload})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Trim(context.Background(), w.pid, Options{Method: MethodPreload})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source != "preload" || rep.Totals.ArenaCount < 2 || tr.Source != "preload" {
		t.Errorf("inspect %s with %d arenas, trim %s", rep.Source, rep.Totals.ArenaCount, tr.Source)
	}
	// Everything next to the stats file belongs to the process' user.
	for _, n := range preloadattacktest.Entries(t, e.Home) {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(e.Home, n), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != preloadattacktest.UID {
			t.Errorf("%s belongs to uid %d", n, st.Uid)
		}
	}
}

// An error answer carrying terminal escapes: memdoctor's message quotes it.
func TestPreloadAttackErrorEscapes(t *testing.T) {
	e := preloadattacktest.New(t)
	pid := e.Start(t, filepath.Join(e.Home, "stats"), "answer", `,"event":"error","error":"\u001b]0;owned\u0007\u001b[2Jcleared"`)
	_, _, err := bounded(t, 10*time.Second, func() (*Report, error) {
		return Inspect(context.Background(), pid, Options{Method: MethodPreload, Timeout: 5 * time.Second})
	})
	if err == nil {
		t.Fatal("an error answer was taken")
	}
	if strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), "cleared") {
		t.Errorf("message %q", err)
	}
}
