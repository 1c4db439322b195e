package malloc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseInfo: ParseInfo never panics, and what it accepts keeps the
// invariants (totals non-negative, in use = system − free, retained ≤ free
// per arena and summed, arena_count = len(arenas), JSON-encodable).
func FuzzParseInfo(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.xml"))
	names = append(names, filepath.Join("testdata", "refsnap-sample.txt"))
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
	good := doc([]string{heap236}, tail236)
	for _, s := range []string{
		good,
		strings.Replace(good, "</sizes>", "<sizes>", 1),
		strings.ReplaceAll(good, `size="200000"`, `size="4611686018427387904"`),
		`<malloc version="1"><heap nr="0"><size from="1" to="4611686018427387903" total="4611686018427387903" count="1"/></heap></malloc>`,
		`<malloc><total type="rest" count="4611686018427387904" size="4611686018427387904"/></malloc>`,
		`<malloc><heap nr="0"><heap nr="1"></malloc>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := parseInfo(bytes.NewReader(data), 4096)
		if err != nil {
			return
		}
		checkInvariants(t, "fuzz", info)
	})
}
