package safeio

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cases := map[string]string{fifo: "a FIFO", sock: "a socket"}
	if os.Geteuid() == 0 {
		// A copy of /dev/zero, made here: read forever before.
		zero := filepath.Join(dir, "zero")
		if err := unix.Mknod(zero, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err == nil {
			cases[zero] = "a character device"
			link := filepath.Join(dir, "meminfo")
			if err := os.Symlink(zero, link); err != nil {
				t.Fatal(err)
			}
			cases[link] = "a character device"
		}
	}
	for p, want := range cases {
		start := time.Now()
		_, err := ReadFile(p, Config)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %s", p, d)
		}
	}
	if _, err := ReadFile(dir, Config); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v", err)
	}
	// The tree view: the same refusals, named relative to the root.
	fsys := NewDirFS(dir, Config)
	if _, err := fs.ReadFile(fsys, "fifo"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "open fifo:") {
		t.Errorf("DirFS fifo: %v", err)
	}
	if _, err := fsys.Open("../etc/passwd"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("DirFS ..: %v", err)
	}
	if _, err := fs.ReadFile(fsys, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DirFS missing: %v", err)
	}
	if ents, err := fs.ReadDir(fsys, "."); err != nil || len(ents) < 2 {
		t.Errorf("DirFS ReadDir: %v %v", ents, err)
	}
}

func TestBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	b, err := ReadFile(p, 2<<20)
	if err != nil || len(b) != 1<<20+1 {
		t.Errorf("under the limit: %d %v", len(b), err)
	}
	// Files of /proc say size 0 and are read to their end.
	if b, err := ReadFile("/proc/self/status", Config); err != nil || !bytes.Contains(b, []byte("VmRSS")) {
		t.Errorf("/proc/self/status: %v", err)
	}
}

func TestDirFSLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("socket:[123]", filepath.Join(dir, "3")); err != nil {
		t.Fatal(err)
	}
	fsys := NewDirFS(dir, Config)
	if l, err := fs.ReadLink(fsys, "3"); err != nil || l != "socket:[123]" {
		t.Errorf("ReadLink: %q %v", l, err)
	}
	if fi, err := fs.Lstat(fsys, "3"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat: %v %v", fi, err)
	}
}
