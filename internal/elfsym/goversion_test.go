package elfsym

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestGoVersionAgreesWithBuildinfo compares GoVersion with
// debug/buildinfo.Read on a Go executable (this test's own), C programs
// from the host, a Go executable whose section headers are gone (the
// fallback) and a file that is not ELF.
func TestGoVersionAgreesWithBuildinfo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := []string{self}
	for _, p := range []string{"/bin/sh", "/bin/bash", "/usr/bin/env", "/bin/ls"} {
		if _, err := os.Stat(p); err == nil {
			files = append(files, p)
		}
	}
	noSections := filepath.Join(t.TempDir(), "no-sections")
	copyWithoutSectionHeaders(t, self, noSections)
	files = append(files, noSections)
	text := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho not elf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, text)

	goSeen := 0
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if bi, err := buildinfo.Read(f); err == nil {
			want = bi.GoVersion
		}
		got, ok := GoVersion(f, nil)
		if got != want || ok != (want != "") {
			t.Errorf("%s: GoVersion = %q, %v; debug/buildinfo says %q", p, got, ok, want)
		}
		if want != "" {
			goSeen++
		}
		_ = f.Close()
	}
	if goSeen < 2 {
		t.Fatalf("only %d of the files were Go executables; the test needs its own binary and its copy", goSeen)
	}
}

// TestGoVersionReadsLittleOfACProgram guards the point of GoVersion: a C
// executable is answered from its headers, not by scanning its data.
func TestGoVersionReadsLittleOfACProgram(t *testing.T) {
	p := "/bin/bash"
	fi, err := os.Stat(p)
	if err != nil {
		t.Skip("no /bin/bash")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	old := &countingReader{r: f}
	if _, err := buildinfo.Read(old); err == nil {
		t.Skip("/bin/bash has Go build information")
	}
	c := &countingReader{r: f}
	if v, ok := GoVersion(c, nil); ok {
		t.Fatalf("bash named as Go %s", v)
	}
	// The ELF header, program and section headers and the section names.
	if c.n.Load() > 16<<10 {
		t.Errorf("GoVersion read %d bytes of a %d-byte C program (debug/buildinfo: %d)", c.n.Load(), fi.Size(), old.n.Load())
	}
	t.Logf("bytes read: GoVersion %d, debug/buildinfo %d", c.n.Load(), old.n.Load())
}

// copyWithoutSectionHeaders copies an ELF executable and removes its
// section header table (e_shoff, e_shnum and e_shstrndx zeroed), as some
// packers and strippers leave a file.
func copyWithoutSectionHeaders(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(readerAt(b))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Class != elf.ELFCLASS64 {
		t.Skip("a 32-bit test binary")
	}
	bo := ef.ByteOrder
	bo.PutUint64(b[0x28:], 0) // e_shoff
	bo.PutUint16(b[0x3c:], 0) // e_shnum
	bo.PutUint16(b[0x3e:], 0) // e_shstrndx
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

type readerAt []byte

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r)) {
		return 0, io.EOF
	}
	n := copy(p, r[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestInlineGoVersion(t *testing.T) {
	hdr := func(flags byte, v string) []byte {
		b := make([]byte, 32, 64)
		copy(b, goBuildInfoMagic)
		b[14], b[15] = 8, flags
		b = binary.AppendUvarint(b, uint64(len(v)))
		return append(b, v...)
	}
	for _, c := range []struct {
		b    []byte
		want string
		ok   bool
	}{
		{hdr(2, "go1.22.3"), "go1.22.3", true},
		{hdr(3, "devel go1.27-abc"), "devel go1.27-abc", true},
		{hdr(0, "go1.17"), "", false},           // pointers, not inline: debug/buildinfo's job
		{hdr(2, "go1.22.3")[:40], "", false},    // the string cut short
		{hdr(2, "not a version"), "", false},    // not Go's
		{hdr(2, ""), "", false},                 // empty
		{[]byte("\xff Go buildinf"), "", false}, // too short
	} {
		got, ok := inlineGoVersion(c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("inlineGoVersion(%q) = %q, %v; want %q, %v", c.b, got, ok, c.want, c.ok)
		}
	}
}

func FuzzInlineGoVersion(f *testing.F) {
	f.Add([]byte("\xff Go buildinf:\x08\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x08go1.22.3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := inlineGoVersion(b)
		if ok && len(v) > len(b) {
			t.Fatalf("version %q longer than its input", v)
		}
	})
}
