package outfile

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func hello(w io.Writer) error {
	_, err := io.WriteString(w, "hello\n")
	return err
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewAndRegularFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := Write(p, 0o600, hello); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 || mustRead(t, p) != "hello\n" {
		t.Fatalf("new file: %v %v", fi, err)
	}
	// Replaced, not rewritten in place: a reader holding the old file
	// keeps seeing it whole.
	old, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := WriteBytes(p, 0o644, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(old); string(b) != "hello\n" || mustRead(t, p) != "second\n" {
		t.Errorf("old reader saw %q, file holds %q", b, mustRead(t, p))
	}
	// A failing writer leaves the old file and no temporary.
	boom := errors.New("boom")
	err = Write(p, 0o644, func(w io.Writer) error {
		_, _ = io.WriteString(w, "partial")
		return boom
	})
	if !errors.Is(err, boom) || mustRead(t, p) != "second\n" {
		t.Errorf("failed write: %v, file %q", err, mustRead(t, p))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	if err := Write(dir, 0o644, hello); !errors.Is(err, ErrRefused) {
		t.Errorf("directory: %v", err)
	}
}

// Device nodes are made as copies in the test's own directory (same major
// and minor as the host's), never the host's own.
func mknod(t *testing.T, p string, mode uint32, major, minor uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	if err := unix.Mknod(p, mode|0o666, int(unix.Mkdev(major, minor))); err != nil {
		t.Skipf("mknod %s: %v (no CAP_MKNOD, or nodev)", p, err)
	}
}

func isChar(t *testing.T, p string, major, minor uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&os.ModeCharDevice == 0 || unix.Major(st.Rdev) != major || unix.Minor(st.Rdev) != minor {
		t.Errorf("%s is now %v (%d:%d), not the character device %d:%d it was", p, fi.Mode(), unix.Major(st.Rdev), unix.Minor(st.Rdev), major, minor)
	}
}

func TestDevicesWrittenThroughOrRefused(t *testing.T) {
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	mknod(t, null, unix.S_IFCHR, 1, 3)
	if err := Write(null, 0o644, hello); err != nil {
		t.Errorf("null: %v", err)
	}
	isChar(t, null, 1, 3)

	// /dev/full: the write fails (ENOSPC) and the node stays a device:
	// before, `capture -o /dev/full` replaced it with a regular file.
	full := filepath.Join(dir, "full")
	mknod(t, full, unix.S_IFCHR, 1, 7)
	if err := Write(full, 0o644, hello); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("full: %v, want ENOSPC", err)
	}
	isChar(t, full, 1, 7)

	// /dev/mem and a block device: refused, untouched.
	mem := filepath.Join(dir, "mem")
	mknod(t, mem, unix.S_IFCHR, 1, 1)
	if err := Write(mem, 0o644, hello); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "character device (1:1)") {
		t.Errorf("mem: %v", err)
	}
	isChar(t, mem, 1, 1)
	blk := filepath.Join(dir, "loop")
	mknod(t, blk, unix.S_IFBLK, 7, 0)
	if err := Write(blk, 0o644, hello); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "block device") {
		t.Errorf("block: %v", err)
	}
	if fi, _ := os.Lstat(blk); fi.Mode()&os.ModeDevice == 0 {
		t.Errorf("block device replaced: %v", fi.Mode())
	}

	// A symbolic link to a terminal-like device (as /dev/stdout is) is
	// written through.
	link := filepath.Join(dir, "stdout")
	if err := os.Symlink(null, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, 0o644, hello); err != nil {
		t.Errorf("link to null: %v", err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v", fi.Mode())
	}
}

func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	// No reader: refused at once, never a hang.
	start := time.Now()
	if err := Write(p, 0o644, hello); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no reader") {
		t.Errorf("fifo without reader: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	got := make(chan string, 1)
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		var b []byte
		buf := make([]byte, 64)
		for len(b) < 6 {
			n, _ := r.Read(buf)
			b = append(b, buf[:n]...)
			if n == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		got <- string(b)
	}()
	if err := Write(p, 0o644, hello); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "hello\n" {
			t.Errorf("reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("reader got nothing")
	}
	_ = r.Close()
	if fi, _ := os.Lstat(p); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("fifo replaced: %v", fi.Mode())
	}
}

func TestSocketRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := Write(p, 0o644, hello); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "socket") {
		t.Errorf("socket: %v", err)
	}
}

func TestSymlinks(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	// To a file in the same directory: that file is replaced, the link kept.
	inDir := filepath.Join(dir, "report-2026.html")
	if err := os.WriteFile(inDir, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.html")
	if err := os.Symlink("report-2026.html", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, 0o644, hello); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 || mustRead(t, inDir) != "hello\n" {
		t.Errorf("link in dir: mode %v, target %q", fi.Mode(), mustRead(t, inDir))
	}
	// To a file elsewhere (a root-owned file, say): refused, nothing written.
	victim := filepath.Join(other, "shadow")
	if err := os.WriteFile(victim, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	if err := os.Symlink(victim, out); err != nil {
		t.Fatal(err)
	}
	if err := Write(out, 0o644, hello); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "outside") {
		t.Errorf("link out of the directory: %v", err)
	}
	if mustRead(t, victim) != "secret" {
		t.Error("victim written")
	}
	// Dangling: refused (creating its target would write where it points).
	dang := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(other, "new"), dang); err != nil {
		t.Fatal(err)
	}
	if err := Write(dang, 0o644, hello); !errors.Is(err, ErrRefused) {
		t.Errorf("dangling: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(other, "new")); err == nil {
		t.Error("dangling link's target created")
	}
}
