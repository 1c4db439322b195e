package elfsym

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/elfsym/elfsymtest"
)

// sameFile says how a and b (debug/elf's and Sections' reading of one
// file) differ: header, section headers and names, the bytes of each
// readable section, and what Exported finds in them.
func sameFile(a, b *elf.File, lim Limits) string {
	if a.FileHeader != b.FileHeader {
		return "file header"
	}
	if len(a.Sections) != len(b.Sections) {
		return "number of sections"
	}
	for i := range a.Sections {
		sa, sb := a.Sections[i], b.Sections[i]
		if sa.SectionHeader != sb.SectionHeader {
			return "section " + sa.Name + "'s header"
		}
		if (sa.ReaderAt == nil) != (sb.ReaderAt == nil) {
			return "section " + sa.Name + " readable in one only"
		}
		if sa.ReaderAt == nil {
			continue
		}
		n := min(sa.FileSize, 256)
		ba, bb := make([]byte, n), make([]byte, n)
		_, ea := sa.ReadAt(ba, 0)
		_, eb := sb.ReadAt(bb, 0)
		if !bytes.Equal(ba, bb) || (ea == nil) != (eb == nil) {
			return "section " + sa.Name + "'s bytes"
		}
	}
	names := []string{"malloc", "free", "je_malloc", "tc_malloc", "mi_malloc", "main"}
	xa, ea := Exported(context.Background(), a, lim, names...)
	xb, eb := Exported(context.Background(), b, lim, names...)
	if (ea == nil) != (eb == nil) || !reflect.DeepEqual(xa, xb) {
		return "exported symbols"
	}
	return ""
}

// Every ELF object of this host's libraries and programs (and this Go
// test binary, whose DWARF sections are compressed) reads the same
// through Sections as through debug/elf, and Sections reads the ordinary
// ones itself rather than handing them over.
func TestSectionsMatchDebugElf(t *testing.T) {
	t.Parallel()
	var files []string
	for _, glob := range []string{"/usr/lib/x86_64-linux-gnu/*.so*", "/usr/lib/aarch64-linux-gnu/*.so*", "/usr/lib/*.so*", "/lib64/*", "/usr/bin/*", "/usr/sbin/*"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if exe, err := os.Executable(); err == nil {
		files = append(files, exe)
	}
	compared, own := 0, 0
	for _, p := range files {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		want, err := elf.NewFile(f)
		if err != nil {
			_ = f.Close() // read-only
			continue
		}
		got, err := Sections(f)
		if err != nil {
			t.Errorf("%s: debug/elf reads it, Sections says %v", p, err)
		} else if d := sameFile(want, got, Default); d != "" {
			t.Errorf("%s: %s differ", p, d)
		}
		if _, ok := sections(f, &sectionBufs{}); ok {
			own++
		}
		// Read again in the buffers the objects before it were read in:
		// nothing of theirs is left in it.
		again, release, err := SectionsReuse(f)
		if err != nil {
			t.Errorf("%s: debug/elf reads it, SectionsReuse says %v", p, err)
		} else if d := sameFile(want, again, Default); d != "" {
			t.Errorf("%s: %s differ, read in kept buffers", p, d)
		}
		release()
		compared++
		_ = f.Close() // read-only
	}
	t.Logf("%d objects compared, %d read by Sections itself", compared, own)
	if compared < 20 {
		t.Fatalf("only %d ELF objects found on this host to compare", compared)
	}
	if own < compared*9/10 {
		t.Errorf("Sections read only %d of %d ordinary objects itself", own, compared)
	}
}

// FuzzSections: any bytes are read or refused without a panic; a file
// both readers read is read the same.
func FuzzSections(f *testing.F) {
	f.Add(elfsymtest.Bomb(20, 30))
	f.Add(elfsymtest.Bomb(1500, 1<<10))
	if p, err := elfsymtest.Patch(elfsymtest.Bomb(5, 10), 50, 4096); err == nil {
		f.Add(p)
	}
	if b, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libc.so.6"); err == nil && len(b) < 4<<20 {
		f.Add(b[:min(len(b), 64<<10)])
	}
	lim := Limits{MaxSymbols: 5000, MaxTable: 2 << 20, MaxName: 4096, MaxNames: 1 << 20, Budget: 2 * time.Second}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := Sections(bytes.NewReader(b))
		want, werr := elf.NewFile(bytes.NewReader(b))
		if gerr != nil && werr == nil {
			t.Fatalf("debug/elf reads it, Sections says %v", gerr)
		}
		if gerr == nil && werr == nil {
			if d := sameFile(want, got, lim); d != "" {
				t.Fatalf("%s differ", d)
			}
		}
		again, release, rerr := SectionsReuse(bytes.NewReader(b))
		defer release()
		if (rerr == nil) != (gerr == nil) {
			t.Fatalf("Sections says %v, SectionsReuse %v", gerr, rerr)
		}
		if rerr == nil && werr == nil {
			if d := sameFile(want, again, lim); d != "" {
				t.Fatalf("%s differ, read in kept buffers", d)
			}
		}
	})
}
