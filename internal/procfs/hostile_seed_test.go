package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

// addHostile adds the hostile-input corpus (testdata/hostile at the
// repository's root) for the named kernel files as fuzz seeds.
func addHostile(f *testing.F, files ...string) {
	f.Helper()
	for _, name := range files {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "hostile", filepath.FromSlash(name), "*"))
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}
