package record

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// touched keeps the reads of the test's own pages from being optimised away.
var touched int

// The child half of TestTrimExecutablePages: a copy of the test binary
// that trims its own executable's pages, says what mincore saw, runs more
// code (the faults that follow must not read the file whole again) and
// waits for its parent to look.
func init() {
	if os.Getenv("MEMDOCTOR_TEST_TRIM_CHILD") != "1" {
		return
	}
	before, after, err := trimExecutablePages()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// Work after the trim: code of fmt, strconv, os, regexp's tables...
	_ = fmt.Sprintf("%v %q %x", []any{1.5, "x", map[string]int{"a": 1}}, "y", 42)
	fmt.Println(before, after)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent has looked
	os.Exit(0)
}

// A fresh copy of the test binary (its own inode, out of the page cache)
// starts, so that its pages are read in as a recorder's are; after
// trimExecutablePages at most three quarters of what start-up brought into
// the page cache is left, the code run after the trim does not read the file whole
// again, and the pages another process maps (here the test, at the end of
// the file) are not dropped.
func TestTrimExecutablePages(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "copy.test")
	copyUncached(t, self, exe)
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := cachedBytes(f, st.Size()); err != nil {
		t.Fatal(err)
	} else if n != 0 {
		t.Skipf("%d bytes of a fresh copy stay in the page cache after dropping it (tmpfs?): nothing to measure", n)
	}
	// Ours: the file's last 64 KiB, mapped and read by this process.
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	page := os.Getpagesize()
	tailStart := (len(m) - 64<<10) / page * page
	for i := tailStart; i < len(m); i += page {
		touched += int(m[i])
	}

	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MEMDOCTOR_TEST_TRIM_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child said nothing: %v", err)
	}
	var before, after int64
	if _, err := fmt.Sscan(line, &before, &after); err != nil {
		t.Fatalf("the child said %q", strings.TrimSpace(line))
	}
	now, err := cachedBytes(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("executable of %d KiB: %d KiB in the page cache after start-up, %d KiB after the trim, %d KiB after more work",
		st.Size()>>10, before>>10, after>>10, now>>10)
	if before < 1<<20 {
		t.Skipf("start-up brought only %d KiB of the executable into the page cache: nothing to trim", before>>10)
	}
	// The code the child runs, and on some kernels its whole text
	// segment, stays; its read-only data (half the file) goes.
	if now > before*3/4 {
		t.Errorf("%d KiB of the executable in the page cache after the trim and more work, of %d KiB after start-up: want at most three quarters", now>>10, before>>10)
	}
	vec := make([]byte, (len(m)-tailStart+page-1)/page)
	if err := mincoreRange(m[tailStart:], vec); err != nil {
		t.Fatal(err)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Errorf("page %d of the file, mapped by another process, was dropped from the page cache", tailStart/page+i)
		}
	}
}

// copyUncached writes a copy of src at dst, on disk and dropped from the
// page cache.
func copyUncached(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fadviseDontNeed(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// Every settle of a lean recorder, not only the first, drops what is
// cached of its executable and no longer mapped: here the test binary,
// read whole with read(2) after the first settle (as a collector reading
// the recorder's own binary, or a page fault's read-ahead, would bring it
// in), must leave the page cache at the next settle but for what this
// process maps.
func TestSettleDropsExecutableReadSince(t *testing.T) {
	r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: time.Hour, Top: 3, Lean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	r.settle() // the first: the trim
	exe, err := os.Open(procfs.SelfExe)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exe.Close() }()
	st, err := exe.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, exe); err != nil {
		t.Fatal(err)
	}
	read, err := cachedBytes(exe, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if read < st.Size()*9/10 {
		t.Skipf("only %d of %d bytes cached after reading the file whole (tmpfs or memory pressure): nothing to measure", read, st.Size())
	}
	time.Sleep(1100 * time.Millisecond) // settles are a second apart
	r.settle()
	after, err := cachedBytes(exe, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test binary of %d KiB: %d KiB cached after reading it, %d KiB after the next settle", st.Size()>>10, read>>10, after>>10)
	if after > read-st.Size()/4 {
		t.Errorf("the settle after reading the executable left %d of %d KiB in the page cache: what is not mapped must go", after>>10, read>>10)
	}
}
