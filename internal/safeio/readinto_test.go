package safeio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadFileIntoBounded: a buffer handed in, whatever its size and old
// content, gives exactly the file; a file past the limit fails with
// ErrTooLarge even when the buffer could hold it; a file larger than the
// buffer is read whole into a larger one.
func TestReadFileIntoBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := write("small", []byte("one line\n"))
	big := write("big", bytes.Repeat([]byte("0123456789abcdef"), 4096)) // 64 KiB
	old := bytes.Repeat([]byte{'X'}, 1<<20)

	got, err := ReadFileInto(small, 1000, old[:0])
	if err != nil || string(got) != "one line\n" {
		t.Fatalf("a small file into a used 1 MiB buffer: %q, %v", got, err)
	}
	got, err = ReadFileInto(big, 1<<20, make([]byte, 0, 100))
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("0123456789abcdef"), 4096)) {
		t.Fatalf("a 64 KiB file into a 100-byte buffer: %d bytes, %v", len(got), err)
	}
	// The limit holds whatever the buffer's size.
	if _, err := ReadFileInto(big, 1000, old[:0]); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 64 KiB file under a 1000-byte limit into a 1 MiB buffer: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFileInto(big, 1000, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 64 KiB file under a 1000-byte limit: %v, want ErrTooLarge", err)
	}
	exact := write("exact", bytes.Repeat([]byte{'e'}, 1000))
	if got, err := ReadFileInto(exact, 1000, old[:0]); err != nil || len(got) != 1000 {
		t.Fatalf("a file of exactly the limit: %d bytes, %v", len(got), err)
	}
	// A kernel file that says its size is 0 is read to its end.
	if got, err := ReadFileInto("/proc/self/status", ProcFile, old[:0]); err != nil || !bytes.Contains(got, []byte("\nVmRSS:")) || bytes.Contains(got, []byte("XXXX")) {
		t.Fatalf("/proc/self/status into a used buffer: %q, %v", got, err)
	}
}

// allocated is the bytes fn allocates a call, over n calls.
func allocated(n int, fn func()) float64 {
	fn()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	for range n {
		fn()
	}
	runtime.ReadMemStats(&b)
	return float64(b.TotalAlloc-a.TotalAlloc) / float64(n)
}

// TestReadSmallAllocatesTheFile: a small file read by ReadSmall or
// Dir.ReadSmall costs the heap its own size, not a read buffer of 4 KiB
// (a recorder's sample reads hundreds of cgroup files of 10 to 2,000
// bytes).
func TestReadSmallAllocatesTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := NewDirFS(dir, ProcFile).OpenDir(".")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for name, read := range map[string]func() ([]byte, error){
		"Dir.ReadSmall": func() ([]byte, error) { return d.ReadSmall("memory.max") },
		"ReadSmall":     func() ([]byte, error) { return ReadSmall(filepath.Join(dir, "memory.max"), ProcFile) },
	} {
		var err error
		per := allocated(200, func() {
			var b []byte
			b, err = read()
			if err == nil && string(b) != "max\n" {
				t.Fatalf("%s read %q", name, b)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// The path and error-free call cost a few dozen bytes; 4 bytes of
		// content in a 4 KiB buffer cost 4 KiB.
		if per > 512 {
			t.Errorf("%s of a 4-byte file allocates %.0f bytes a read, want under 512", name, per)
		}
	}
}
