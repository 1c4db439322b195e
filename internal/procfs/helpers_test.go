package procfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testPID is the process captured in testdata/host/proc.
const testPID = 7130

// hostFS is the live capture in testdata/host (kernel 6.18, x86_64, 4 KiB pages).
func hostFS() FS { return NewFSFrom(os.DirFS(filepath.Join("testdata", "host")), 4096) }

// refFS is the kernel reference snapshot in testdata/refsnap.
func refFS() FS { return NewFSFrom(os.DirFS(filepath.Join("testdata", "refsnap")), 4096) }

// readTestdata reads a file below testdata.
func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// wantParseError checks err is a *ParseError for file at line (line < 0:
// any line) that wraps ErrMalformed.
func wantParseError(t *testing.T, err error, file string, line int) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *ParseError", err, err)
	}
	if pe.File != file || (line >= 0 && pe.Line != line) {
		t.Errorf("error at %s:%d, want %s:%d (%v)", pe.File, pe.Line, file, line, err)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("error %v does not wrap ErrMalformed", err)
	}
}

// checkFuzzError is the invariant every parser's error keeps: a
// *ParseError naming a file, wrapping ErrMalformed.
func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File == "" || pe.Line < 0 || !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v (%T) is not a *ParseError wrapping ErrMalformed", err, err)
	}
}

// checkKV checks KV's invariants: keys unique, each in exactly one map.
func checkKV(t *testing.T, kv KV) {
	t.Helper()
	seen := make(map[string]bool, len(kv.Keys))
	for _, k := range kv.Keys {
		if seen[k] {
			t.Fatalf("key %q listed twice", k)
		}
		seen[k] = true
		_, num := kv.Num[k]
		_, text := kv.Text[k]
		if num == text {
			t.Fatalf("key %q: in Num %v, in Text %v", k, num, text)
		}
	}
	if len(kv.Num)+len(kv.Text) != len(kv.Keys) {
		t.Fatalf("%d keys but %d values", len(kv.Keys), len(kv.Num)+len(kv.Text))
	}
}
