package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// blockDevice makes a block device node in dir for a loop device the test
// attaches to a zeroed file of its own (detached at the end), and returns
// the node and the file behind it. Without loop devices the node names a
// device that does not exist: still a block device to refuse.
func blockDevice(t *testing.T, dir string) (node, backing string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	node = filepath.Join(dir, "disk")
	major, minor := uint32(7), uint32(1<<19) // a loop minor no host has
	if losetup, err := exec.LookPath("losetup"); err == nil {
		backing = filepath.Join(dir, "disk.img")
		if err := os.WriteFile(backing, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(losetup, "--find", "--show", backing).Output()
		if err == nil {
			loop := strings.TrimSpace(string(out))
			t.Cleanup(func() { _ = exec.Command(losetup, "--detach", loop).Run() })
			var st unix.Stat_t
			if err := unix.Stat(loop, &st); err != nil {
				t.Fatal(err)
			}
			major, minor = unix.Major(st.Rdev), unix.Minor(st.Rdev)
		} else {
			t.Logf("no loop device (%v): the node names none", err)
			backing = ""
		}
	}
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(unix.Mkdev(major, minor))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	return node, backing
}

// Every command that writes a file writes through the one checked writer:
// a block device (a copy of a loop device's node in the test's directory,
// over a file of the test's) is refused and left unwritten, and a
// symbolic link that leads out of the directory named is not followed.
// Before, `alerts -o` wrote its YAML into the device and through the link.
func TestOutputsRefuseDevicesAndLinks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "rec.db")
	writeStore(t, db)
	dev, backing := blockDevice(t, dir)
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "out.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"alerts", "-o"},
		{"export", "--from", db, "--format", "openmetrics", "-o"},
		{"report", "--from", db, "-o"},
	} {
		_, errOut, code := runCLI(t, append(args, dev)...)
		if code == 0 || !strings.Contains(errOut, "block device") {
			t.Errorf("%v on a block device: exit %d, %q", args, code, errOut)
		}
		if fi, err := os.Lstat(dev); err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			t.Fatalf("%v: %s is no longer a block device: %v", args, dev, err)
		}
		if backing != "" {
			// What the device holds is read through the loop device's
			// own file: still zeros.
			b, err := os.ReadFile(backing)
			if err != nil {
				t.Fatal(err)
			}
			if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("%v wrote into the block device: %q at byte %d", args, b[i:min(len(b), i+40)], i)
			}
		}
		_, errOut, code = runCLI(t, append(args, link)...)
		if code == 0 || !strings.Contains(errOut, "symbolic link") {
			t.Errorf("%v through a link out of its directory: exit %d, %q", args, code, errOut)
		}
		if b, err := os.ReadFile(outside); err != nil || string(b) != "keep me\n" {
			t.Fatalf("%v wrote through the link: %.80q %v", args, b, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%v replaced the link: %v", args, err)
		}
	}
}
