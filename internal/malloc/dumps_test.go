package malloc

// Real malloc_info dumps of the workload, saved into testdata/ by
//
//	go test ./internal/malloc -run TestSaveDumps -save-dumps
//
// (root and gcc needed), then parsed by TestWorkloadDumps.

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var saveDumps = flag.Bool("save-dumps", false, "run the workload and save its malloc_info dumps into testdata/")

func TestSaveDumps(t *testing.T) {
	if !*saveDumps {
		t.Skip("only with -save-dumps")
	}
	requirePtrace(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"hoard-8x64", nil, []string{"hoard", "8", "64"}},
		{"leak-8x16", nil, []string{"leak", "8", "16", "2"}},
		{"healthy-8x2", nil, []string{"healthy", "8", "2"}},
		{"hoard-64x1", nil, []string{"hoard", "64", "1"}},
	} {
		w := startWorkload(t, false, c.env, c.args...)
		rep, err := Inspect(context.Background(), w.pid, Options{Method: MethodPtrace})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", c.name+".xml"), rep.XML, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %d arenas; own mallinfo2 %+v", c.name, len(rep.XML), rep.Totals.ArenaCount, w.ready)
	}
}
