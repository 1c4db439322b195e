package probe

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// compare recognises a probe result by the kind of its JSON document,
// and nothing else as one (another document, a missing file, a FIFO that
// would block a plain open).
func TestIsResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		write("probe.json", `{"kind":"`+Kind+`","version":1}`): true,
		write("other.json", `{"kind":"memdoctor-report"}`):     false,
		write("not.json", "node_memory_MemTotal_bytes 1\n"):    false,
		filepath.Join(dir, "missing.json"):                     false,
		fifo:                                                   false,
	} {
		if got := IsResult(path); got != want {
			t.Errorf("IsResult(%s) = %v, want %v", filepath.Base(path), got, want)
		}
	}
}
