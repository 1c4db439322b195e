package elfsym

import (
	"bytes"
	"context"
	"debug/elf"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/elfsym/elfsymtest"
)

// FuzzRead: any object, within small limits, is read or refused without a
// panic, and what is read stays within them; Exported (through a GNU hash
// table, or entry by entry) finds only the names asked.
func FuzzRead(f *testing.F) {
	f.Add(elfsymtest.Bomb(1500, 1<<20))
	f.Add(elfsymtest.Bomb(15000, 1<<20))
	f.Add(elfsymtest.Bomb(20, 30))
	if p, err := elfsymtest.Patch(elfsymtest.Bomb(5, 10), 50, 4096); err == nil {
		f.Add(p) // a second table, with the section headers moved
	}
	lim := Limits{MaxSymbols: 5000, MaxTable: 2 << 20, MaxName: 4096, MaxNames: 1 << 20, Budget: 2 * time.Second}
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		if ex, err := Exported(context.Background(), ef, lim, "malloc", "free"); err == nil {
			for n, s := range ex {
				if n != "malloc" && n != "free" || s.Name != n {
					t.Fatalf("Exported of malloc and free found %q (%q)", n, s.Name)
				}
			}
		}
		for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
			syms, err := Read(context.Background(), ef, typ, lim, nil)
			if err != nil {
				continue
			}
			total := 0
			for _, s := range syms {
				if len(s.Name) > lim.MaxName {
					t.Fatalf("a %d-byte name", len(s.Name))
				}
				total += len(s.Name)
			}
			if len(syms) >= lim.MaxSymbols || int64(total) > lim.MaxNames {
				t.Fatalf("%d symbols, %d bytes of names", len(syms), total)
			}
		}
	})
}
