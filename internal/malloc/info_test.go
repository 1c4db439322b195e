package malloc

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// The reference malloc_info sample: the numbers checked against the
// demo program's own mallinfo2 lines printed around it.
func TestParseInfoReferenceSample(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "refsnap-sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := parseInfo(f, 4096)
	if err != nil {
		t.Fatal(err)
	}
	// "after threads (fragmented)": arena=41836544 fordblks=40698736
	// uordblks=1137808 keepcost=1180976.
	tot := info.Totals
	if tot.SystemBytes != 41836544 || tot.FreeBytes != 40699536 || tot.ArenaCount != 3 || tot.FreeChunks != 803 {
		t.Errorf("totals %+v", tot)
	}
	// fordblks is smaller by one byte per binned chunk (2 × 400).
	if got := tot.FreeBytes - (tot.FreeChunks - int64(tot.ArenaCount)); got != 40698736 {
		t.Errorf("free bytes without flag bits %d, mallinfo2 fordblks 40698736", got)
	}
	if info.Arenas[0].TopBytes != 1180976 {
		t.Errorf("main top %d, mallinfo2 keepcost 1180976", info.Arenas[0].TopBytes)
	}
	if got, want := info.Arenas[1].LargestFreeChunkBytes, int64(49392); got != want {
		t.Errorf("largest free chunk %d, want %d (to=49393 less the flag bit)", got, want)
	}
	// malloc_trim(0) took RSS from 41460 kB to 6192 kB: 35268 kB. The
	// estimate: 2 × (19708464 − 400 × 4145) + the main top's whole pages.
	if want := int64(2*(19708464-400*4145) + 1179648); tot.RetainedBytes != want {
		t.Errorf("retained %d, want %d", tot.RetainedBytes, want)
	}
	if r := float64(35268<<10) / float64(tot.RetainedBytes); r < 0.9 || r > 1.0 {
		t.Errorf("measured RSS drop / retained = %.3f", r)
	}
	if len(info.Warnings) != 0 {
		t.Errorf("warnings %q", info.Warnings)
	}
}

// golden is what the golden files hold: the parse without the bin lines.
func golden(info *Info) *Info {
	g := *info
	g.Arenas = append([]Arena(nil), info.Arenas...)
	for i := range g.Arenas {
		g.Arenas[i].Bins = nil
	}
	return &g
}

func TestWorkloadDumps(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob(filepath.Join("testdata", "*.xml"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no dumps: %v", err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := parseInfo(bytes.NewReader(data), 4096)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkInvariants(t, name, info)
		if len(info.Warnings) != 0 {
			t.Errorf("%s: warnings %q", name, info.Warnings)
		}
		got, err := json.MarshalIndent(golden(info), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		gname := strings.TrimSuffix(name, ".xml") + ".golden.json"
		if *update {
			if err := os.WriteFile(gname, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(gname)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if d := cmp.Diff(string(want), string(got)); d != "" {
			t.Errorf("%s (-golden +got):\n%s", name, d)
		}
	}
}

// checkInvariants holds for every document ParseInfo accepts.
func checkInvariants(t *testing.T, name string, info *Info) {
	t.Helper()
	tot := info.Totals
	if tot.ArenaCount != len(info.Arenas) {
		t.Errorf("%s: arena_count %d, %d arenas", name, tot.ArenaCount, len(info.Arenas))
	}
	if tot.InUseBytes < 0 || tot.FreeBytes < 0 || tot.SystemBytes < 0 || tot.RetainedBytes < 0 || tot.MmapBytes < 0 {
		t.Errorf("%s: negative totals %+v", name, tot)
	}
	if tot.InUseBytes != max(0, tot.SystemBytes-tot.FreeBytes) {
		t.Errorf("%s: in use %d ≠ system %d − free %d", name, tot.InUseBytes, tot.SystemBytes, tot.FreeBytes)
	}
	var retained int64
	for _, a := range info.Arenas {
		if a.RetainedBytes < 0 || a.RetainedBytes > a.FreeBytes || a.InUseBytes < 0 || a.LargestFreeChunkBytes < 0 {
			t.Errorf("%s: arena %d: %+v", name, a.Nr, a)
		}
		retained = add(retained, a.RetainedBytes)
	}
	if retained != tot.RetainedBytes {
		t.Errorf("%s: retained %d ≠ Σ arenas %d", name, tot.RetainedBytes, retained)
	}
	if _, err := json.Marshal(info); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// doc builds a document from heap bodies and a global tail.
func doc(heaps []string, tail string) string {
	var b strings.Builder
	b.WriteString("<malloc version=\"1\">\n")
	for i, h := range heaps {
		b.WriteString("<heap nr=\"" + string(rune('0'+i)) + "\">\n" + h + "</heap>\n")
	}
	b.WriteString(tail + "</malloc>\n")
	return b.String()
}

const (
	// A 2.36 arena: one unsorted line of 2 chunks, top 50000.
	heap236 = `<sizes>
  <unsorted from="20481" to="40961" total="61442" count="2"/>
</sizes>
<total type="fast" count="0" size="0"/>
<total type="rest" count="3" size="111442"/>
<system type="current" size="200000"/>
<system type="max" size="200000"/>
<aspace type="total" size="200000"/>
<aspace type="mprotect" size="200000"/>
`
	tail236 = `<total type="fast" count="0" size="0"/>
<total type="rest" count="3" size="111442"/>
<total type="mmap" count="2" size="2097152"/>
<system type="current" size="200000"/>
<system type="max" size="200000"/>
<aspace type="total" size="200000"/>
<aspace type="mprotect" size="200000"/>
`
)

func TestParseInfoTolerance(t *testing.T) {
	t.Parallel()
	// 2 chunks of 20480 and 40960 (+ flag bits): each gives S − 48 − 4096
	// on average; the main top 50000 gives 49152 (whole pages above 32 B).
	const retained = 61442 - 2*4145 + 49152
	base := Totals{SystemBytes: 200000, SystemMaxBytes: 200000, InUseBytes: 88558, FreeBytes: 111442, FreeChunks: 3,
		RetainedBytes: retained, MmapBytes: 2097152, MmapChunks: 2, AspaceBytes: 200000, ArenaCount: 1}
	noFast := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, `type="fast"`) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	for _, c := range []struct {
		name     string
		in       string
		want     Totals
		top      int64
		warnings int
	}{
		{"2.36", doc([]string{heap236}, tail236), base, 50000, 0},
		{"2.43 without fastbins", noFast(doc([]string{heap236}, tail236)), base, 50000, 0},
		{"malformed </sizes> of master (Dec 2025)", strings.Replace(doc([]string{heap236}, tail236), "</sizes>", "<sizes>", 1), base, 50000, 0},
		{"unknown elements and attributes", strings.Replace(doc([]string{heap236}, tail236), "<sizes>",
			`<sizes extra="1"><tcache count="7"/><future><x/></future>`, 1), base, 50000, 0},
		{"text around the document", "mallinfo: arena=1\n" + doc([]string{heap236}, tail236) + "after trim\n", base, 50000, 0},
		{"no global totals: sums of the arenas", doc([]string{heap236}, ""),
			Totals{SystemBytes: 200000, SystemMaxBytes: 200000, InUseBytes: 88558, FreeBytes: 111442, FreeChunks: 3, RetainedBytes: retained, AspaceBytes: 200000, ArenaCount: 1},
			50000, 1},
		{"before 2.30: rest without the top chunk", doc([]string{strings.Replace(heap236, `count="3" size="111442"`, `count="2" size="61442"`, 1)},
			strings.Replace(tail236, `count="3" size="111442"`, `count="2" size="61442"`, 1)),
			Totals{SystemBytes: 200000, SystemMaxBytes: 200000, InUseBytes: 138558, FreeBytes: 61442, FreeChunks: 2, RetainedBytes: 61442 - 2*4145,
				MmapBytes: 2097152, MmapChunks: 2, AspaceBytes: 200000, ArenaCount: 1}, -1, 0},
		{"empty", `<malloc version="1"></malloc>`, Totals{}, 0, 1},
		{"unknown version", strings.Replace(doc([]string{heap236}, tail236), `version="1"`, `version="2"`, 1), base, 50000, 1},
	} {
		info, err := parseInfo(strings.NewReader(c.in), 4096)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		checkInvariants(t, c.name, info)
		if d := cmp.Diff(c.want, info.Totals); d != "" {
			t.Errorf("%s: totals (-want +got):\n%s", c.name, d)
		}
		if len(info.Arenas) > 0 && info.Arenas[0].TopBytes != c.top {
			t.Errorf("%s: top %d, want %d", c.name, info.Arenas[0].TopBytes, c.top)
		}
		if len(info.Warnings) != c.warnings {
			t.Errorf("%s: warnings %q, want %d", c.name, info.Warnings, c.warnings)
		}
	}
}

func TestParseInfoFastbins(t *testing.T) {
	t.Parallel()
	// A 2.36 main arena with fastbin lines (from = size−15, to = size,
	// total = count × size) before the bin lines (raw sizes, odd).
	heap := `<sizes>
  <size from="17" to="32" total="96" count="3"/>
  <size from="33" to="48" total="480" count="10"/>
  <size from="8193" to="8193" total="16386" count="2"/>
</sizes>
<total type="fast" count="13" size="576"/>
<total type="rest" count="3" size="20386"/>
<system type="current" size="135168"/>
<system type="max" size="135168"/>
<aspace type="total" size="135168"/>
<aspace type="mprotect" size="135168"/>
`
	info, err := parseInfo(strings.NewReader(doc([]string{heap}, "")), 4096)
	if err != nil {
		t.Fatal(err)
	}
	a := info.Arenas[0]
	kinds := []string{}
	for _, b := range a.Bins {
		kinds = append(kinds, b.Kind)
	}
	if d := cmp.Diff([]string{"fast", "fast", "bin"}, kinds); d != "" {
		t.Errorf("kinds (-want +got):\n%s", d)
	}
	if a.FreeBytes != 576+20386 || a.FreeChunks != 16 || a.TopBytes != 4000 || a.LargestFreeChunkBytes != 8192 {
		t.Errorf("arena %+v", a)
	}
	// Two 8192-byte chunks: 16386 − 2 × 4145 = 8096; the 4000-byte top
	// holds no whole page.
	if a.RetainedBytes != 8096 {
		t.Errorf("retained %d, want 8096", a.RetainedBytes)
	}
}

func TestParseInfoErrors(t *testing.T) {
	t.Parallel()
	good := doc([]string{heap236}, tail236)
	for _, c := range []struct {
		name, in string
		want     error
		words    string
	}{
		{"empty input", "", ErrNotMallocInfo, ""},
		{"other XML", "<html><body/></html>", ErrNotMallocInfo, ""},
		{"truncated", good[:len(good)/2], ErrTruncated, ""},
		{"negative", strings.Replace(good, `size="200000"`, `size="-1"`, 1), nil, `size="-1"`},
		{"not a number", strings.Replace(good, `count="2"`, `count="two"`, 1), nil, "line 4"},
		{"huge", strings.Replace(good, `size="200000"`, `size="99999999999999999999"`, 1), nil, "2^62"},
		{"missing attribute", strings.Replace(good, ` count="2"`, ``, 1), nil, "without count"},
		{"heap without nr", strings.Replace(good, ` nr="0"`, ``, 1), nil, "without nr"},
		{"nested malloc", strings.Replace(good, "<sizes>", "<malloc>", 1), nil, "inside"},
	} {
		_, err := parseInfo(strings.NewReader(c.in), 4096)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.words != "" && !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %q does not say %q", c.name, err, c.words)
		}
	}
}

func TestSetPageSize(t *testing.T) {
	t.Parallel()
	info, err := parseInfo(strings.NewReader(doc([]string{heap236}, tail236)), 4096)
	if err != nil {
		t.Fatal(err)
	}
	info.SetPageSize(65536)
	// 64 KiB pages: no chunk holds a whole page, the 50000-byte top none.
	if info.Totals.RetainedBytes != 0 || info.PageSize != 65536 {
		t.Errorf("retained %d with 64 KiB pages", info.Totals.RetainedBytes)
	}
}
