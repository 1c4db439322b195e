package jsonenc

import (
	"context"
	"testing"

	"github.com/memdoctor/memdoctor/internal/usecase/live"
)

// BenchmarkFirstUse is what a command run once pays: the report of a
// capture written with no plan made yet, so that every type its values
// hold is planned (the work whole runs see in bench/check.sh, alone).
func BenchmarkFirstUse(b *testing.B) {
	h, err := live.OpenHost("", "../../testdata/captures/malloc-arenas-6.18-x86_64-hybrid.txtar")
	if err != nil {
		b.Fatal(err)
	}
	rep, err := live.Check(context.Background(), h, live.CheckOptions{Top: 10})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		encoders.Clear()
		if _, ok := AppendIndent(make([]byte, 0, 64<<10), rep, "", "  "); !ok {
			b.Fatal("left to encoding/json")
		}
	}
}
