package safeio

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadFileSyscalls counts, with strace, the system calls of reading
// small kernel files: ReadFile's open, fstat, two reads (the content, then
// the end) and close, with no fcntl, no second fstat, no poller
// registration; ReadSmall's and ReadOnceInto's open, read and close. The test binary runs
// itself under strace to do the reads.
func TestReadFileSyscalls(t *testing.T) {
	const reads = 200
	if os.Getenv("SAFEIO_STRACE_CHILD") != "" {
		for range reads {
			if _, err := ReadFile("/proc/self/stat", ProcFile); err != nil {
				t.Fatal(err)
			}
			if b, err := ReadSmall("/proc/self/statm", ProcFile); err != nil || len(b) == 0 {
				t.Fatal(b, err)
			}
			if b, err := ReadOnceInto("/proc/self/status", ProcFile, nil); err != nil || !bytes.Contains(b, []byte("\nVmRSS:")) {
				t.Fatal(b, err)
			}
			// A first read of nothing is settled on the same descriptor.
			if b, err := ReadOnceInto(os.Getenv("SAFEIO_EMPTY"), ProcFile, nil); err != nil || len(b) != 0 {
				t.Fatal(b, err)
			}
			if b, err := ReadSmall(os.Getenv("SAFEIO_EMPTY_SMALL"), ProcFile); err != nil || len(b) != 0 {
				t.Fatal(b, err)
			}
		}
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	out := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-e", "trace=openat,fstat,newfstatat,read,close,fcntl,epoll_ctl", "-o", out,
		os.Args[0], "-test.run", "^TestReadFileSyscalls$", "-test.count=1")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	emptySmall := empty + "-small"
	if err := os.WriteFile(emptySmall, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "SAFEIO_STRACE_CHILD=1", "SAFEIO_EMPTY="+empty, "SAFEIO_EMPTY_SMALL="+emptySmall)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, b)
	}
	trace, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for file, most := range map[string]float64{"/proc/self/stat": 5, "/proc/self/statm": 3, "/proc/self/status": 3, empty: 4, emptySmall: 4} {
		opens, calls := count(string(trace), file)
		if opens < reads {
			t.Fatalf("saw %d opens of %s in the trace, want %d:\n%s", opens, file, reads, bytes.TrimSpace(trace[:min(len(trace), 2000)]))
		}
		if opens > reads {
			t.Errorf("%s: opened %d times for %d reads", file, opens, reads)
		}
		t.Logf("%s: %d reads, %.1f system calls each", file, opens, float64(calls)/float64(opens))
		if per := float64(calls) / float64(opens); per > most {
			t.Errorf("%s: %.1f system calls a read; want at most %g", file, per, most)
		}
	}
}

// count returns how many times file was opened in an strace log, and the
// calls on its descriptors from each open to its close.
func count(trace, file string) (opens, calls int) {
	open := map[string]bool{}
	// strace -f splits a call another thread interrupts into
	// "openat(... <unfinished ...>" and "<... openat resumed>) = FD": the
	// thread's open of file waits for its result line.
	pending := map[string]bool{}
	for _, line := range strings.Split(trace, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		call := f[1]
		if call == "<..." && len(f) > 2 && f[2] == "openat" && pending[f[0]] {
			delete(pending, f[0])
			call, line = "openat(", `"`+file+`" `+line
		}
		if strings.HasPrefix(call, "openat(") {
			if strings.Contains(line, `"`+file+`"`) {
				if strings.HasSuffix(line, "<unfinished ...>") {
					pending[f[0]] = true
					continue
				}
				if i := strings.LastIndex(line, "= "); i > 0 {
					if fd, err := strconv.Atoi(strings.TrimSpace(line[i+2:])); err == nil {
						open[strconv.Itoa(fd)] = true
						opens++
						calls++
					}
				}
			}
			continue
		}
		// call(FD, ...), or epoll_ctl(EPFD, OP, FD, ...).
		args := call[strings.IndexByte(call, '(')+1:]
		fd := strings.TrimRight(strings.Split(args, ",")[0], ")")
		if strings.HasPrefix(call, "epoll_ctl(") && len(f) > 3 {
			fd = strings.TrimRight(f[3], ",")
		}
		if open[fd] {
			calls++
			if strings.HasPrefix(call, "close(") {
				delete(open, fd)
			}
		}
	}
	return opens, calls
}

// TestReadSmallRefuses: the small read still refuses what is not a
// regular file, reads a file larger than its first buffer whole, and
// keeps to the limit.
func mkfifo(p string) error { return unix.Mkfifo(p, 0o600) }

func TestReadSmallRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSmall(fifo, Config); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("fifo: %v", err)
	}
	if _, err := ReadSmall(dir, Config); err == nil {
		t.Error("a directory was read")
	}
	big := bytes.Repeat([]byte("total_cache 123456\n"), 1000)
	p := filepath.Join(dir, "memory.stat")
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSmall(p, Config); err != nil || !bytes.Equal(b, big) {
		t.Errorf("large file: %d bytes of %d, %v", len(b), len(big), err)
	}
	if _, err := ReadSmall(p, 1000); err == nil {
		t.Error("read past the limit")
	}
	small := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(small, []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSmall(small, Config); err != nil || string(b) != "max\n" {
		t.Errorf("small file: %q, %v", b, err)
	}
	if b, err := ReadSmall("/proc/self/status", Config); err != nil || !bytes.Contains(b, []byte("VmRSS")) {
		t.Errorf("/proc/self/status: %v", err)
	}
}

// TestReadOnceIntoRefuses: a read that does not settle the file at once
// still refuses what is not a regular file; a file larger than the first
// read is read whole, within the limit.
func TestReadOnceIntoRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOnceInto(fifo, Config, nil); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("fifo: %v", err)
	}
	if _, err := ReadOnceInto(dir, Config, nil); err == nil {
		t.Error("a directory was read")
	}
	if _, err := ReadOnceInto("/dev/zero", Config, nil); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/zero (a full first read): %v", err)
	}
	big := bytes.Repeat([]byte("total_cache 123456\n"), 1000)
	p := filepath.Join(dir, "memory.stat")
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	old := bytes.Repeat([]byte{'X'}, 1<<16)
	if b, err := ReadOnceInto(p, Config, old[:0]); err != nil || !bytes.Equal(b, big) {
		t.Errorf("large file: %d bytes of %d, %v", len(b), len(big), err)
	}
	if _, err := ReadOnceInto(p, 1000, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the limit: %v, want ErrTooLarge", err)
	}
	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, bytes.Repeat([]byte{'e'}, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadOnceInto(exact, 1000, nil); err != nil || len(b) != 1000 {
		t.Errorf("a file of exactly the limit: %d bytes, %v", len(b), err)
	}
	if b, err := ReadOnceInto(exact, 999, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file one byte past the limit: %d bytes, %v", len(b), err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadOnceInto(empty, Config, nil); err != nil || len(b) != 0 {
		t.Errorf("an empty file: %q, %v", b, err)
	}
	if _, err := ReadOnceInto(filepath.Join(dir, "missing"), Config, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestDir: files read relative to an open directory, its subdirectories
// listed (not its files, nor a link to a directory), a missing file is
// fs.ErrNotExist, and a FIFO is refused.
func TestDir(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cg/a", "cg/b", "cg/b/c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "cg/memory.current"), []byte("4096\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "cg/a"), filepath.Join(root, "cg/link")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(root, "cg/memory.stat")); err != nil {
		t.Fatal(err)
	}
	d, err := NewDirFS(root, Config).OpenDir("cg")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if b, err := d.ReadSmall("memory.current"); err != nil || string(b) != "4096\n" {
		t.Errorf("memory.current: %q, %v", b, err)
	}
	if _, err := d.ReadSmall("memory.max"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "cg/memory.max") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := d.ReadSmall("memory.stat"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("fifo: %v", err)
	}
	subs, err := d.SubDirs()
	sort.Strings(subs)
	if err != nil || strings.Join(subs, ",") != "a,b" {
		t.Errorf("subdirectories: %v, %v; want a,b", subs, err)
	}
	if _, err := NewDirFS(root, Config).OpenDir("cg/memory.current"); err == nil {
		t.Error("a file opened as a directory")
	}
}

// count follows an open that another thread's call split in the trace
// (it missed it, and TestReadFileSyscalls failed now and then on a busy
// host).
func TestCountSplitOpen(t *testing.T) {
	const trace = `101 openat(AT_FDCWD, "/proc/self/stat", O_RDONLY|O_CLOEXEC <unfinished ...>
102 read(3, "x", 10) = 1
101 <... openat resumed>) = 7
101 fstat(7, {st_mode=S_IFREG|0444, st_size=0, ...}) = 0
101 read(7, "1 (x) R", 4096) = 7
101 read(7, "", 4089) = 0
101 close(7) = 0
102 openat(AT_FDCWD, "/proc/self/statm", O_RDONLY|O_CLOEXEC <unfinished ...>
101 openat(AT_FDCWD, "/proc/self/stat", O_RDONLY|O_CLOEXEC) = 8
102 <... openat resumed>) = 9
101 close(8) = 0
`
	if opens, calls := count(trace, "/proc/self/stat"); opens != 2 || calls != 7 {
		t.Errorf("%d opens, %d calls; want 2 and 7", opens, calls)
	}
}
