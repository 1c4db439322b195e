package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/store"
)

// groupedText is a file whose lines are grouped by instance, the instances
// not in name order, with comments, blank lines, CRLF, label orders that
// differ, a series without an instance label (the file's own instance) and
// the "# EOF" of concatenated dumps
// inside an instance's lines.
const groupedText = "# HELP node_memory_MemAvailable_bytes x\n" +
	"# TYPE node_memory_MemAvailable_bytes gauge\n" +
	"node_memory_MemAvailable_bytes{instance=\"web-2\",job=\"node\"} 300 1700000000\n" +
	"node_memory_MemTotal_bytes{job=\"node\",instance=\"web-2\"} 1000 1700000000\n" +
	"\n" +
	"# EOF\n" +
	"node_memory_MemAvailable_bytes{job=\"node\",instance=\"web-2\"} 280 1700000060\r\n" +
	"node_memory_MemTotal_bytes{instance=\"web-2\",job=\"node\"} 1000 1700000060\n" +
	"node_memory_MemAvailable_bytes{instance=\"db-1\"} 7e2 1700000000.5\n" +
	"# a comment inside an instance\n" +
	"node_memory_MemAvailable_bytes{instance=\"db-1\",zone=\"\"} 650 1700000120\n" +
	"node_load1 0.5 1700000000\n" +
	"node_load1 0.7 1700000060\n" +
	"{\"node_memory_MemFree_bytes\",instance=\"web-10\"} 42 1700000000\n" +
	"# EOF\n"

// memContents is everything a Mem holds of instance, as diagnose reads it.
func memContents(t *testing.T, m *store.Mem, instance string) string {
	t.Helper()
	var b strings.Builder
	from, to, err := m.TimeRange(instance)
	if err != nil {
		t.Fatalf("time range of %s: %v", instance, err)
	}
	fmt.Fprintf(&b, "%s … %s\n", from.UTC(), to.UTC())
	series, err := m.Select(store.Query{Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		fmt.Fprintf(&b, "%s %v %v\n", s.Key(), s.Points, s.Labels)
	}
	latest, err := m.Latest(instance, to, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "latest %s %v\n", latest.Time.UTC(), latest.Metrics)
	return b.String()
}

// indexedNames lists the instances x indexes, in the order it gives them.
func indexedNames(t *testing.T, x *TextIndex) []string {
	t.Helper()
	var names []string
	if err := x.Batches(3, func(b TextBatch) error {
		names = append(names, b.Names...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(names) != x.Len() {
		t.Fatalf("%d instances given of %d indexed", len(names), x.Len())
	}
	return names
}

// An instance read in a batch holds what reading the whole file gives it.
func TestReadBatchHoldsWhatReadMemHolds(t *testing.T) {
	path := writeFile(t, t.TempDir(), "fleet.om", groupedText)
	whole, _, err := ReadMem(path, IngestOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	x, err := IndexText(path, IngestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	want, _ := whole.Instances()
	if got := indexedNames(t, x); !reflect.DeepEqual(got, want) {
		t.Fatalf("indexed instances %q, the whole file has %q", got, want)
	}
	if len(want) != 4 {
		t.Fatalf("the whole file has instances %q, want 4", want)
	}
	// One batch of all, and each instance on its own.
	batches := [][]string{want}
	for _, in := range want {
		batches = append(batches, []string{in})
	}
	for _, batch := range batches {
		b, err := x.Find(batch)
		if err != nil {
			t.Fatalf("batch %q: %v", batch, err)
		}
		m, err := x.ReadBatch(b, 1<<20)
		if err != nil {
			t.Fatalf("batch %q: %v", batch, err)
		}
		for _, in := range batch {
			if got, want := memContents(t, m, in), memContents(t, whole, in); got != want {
				t.Errorf("batch %q: instance %s holds\n%s\nread whole it holds\n%s", batch, in, got, want)
			}
		}
	}
	if _, err := x.Find([]string{"nowhere"}); err == nil || !strings.Contains(err.Error(), `"nowhere" is not in`) {
		t.Errorf("reading an instance the file does not have: %v, want an error naming it", err)
	}
}

// A file that cannot be read a batch at a time with the same result says
// so (ErrNoStream), at the scan or at the batch that shows it.
func TestIndexTextRefusesWhatOnlyTheWholeFileSays(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(groupedText))
	_ = zw.Close()
	gzPath := filepath.Join(dir, "fleet.om.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	a := "m{instance=\"a\"} 1 1700000000\n"
	b := "m{instance=\"b\"} 1 1700000000\n"
	for _, c := range []struct {
		name, text string
		atBatch    bool // the scan accepts it, reading the batch refuses it
	}{
		// Found where it happens, not after holding a run for every line.
		{"interleaved", a + b + "m{instance=\"a\"} 2 1700000060\n" + b + "m{ 3\n", false},
		{"no timestamp", a + "m{instance=\"b\"} 1\n", false},
		{"out of time order", a + "m{instance=\"a\"} 2 1699999990\n", false},
		{"cut short", a + b + "m{instance=\"b\"} 2 17", false},
		{"no final EOF", a + "# EOF\n" + b, false},
		{"malformed series", a + "m{instance=\"b\" 1 1700000000\n", false},
		{"repeated sample", a + b + b, true},
		{"NaN", a + "m{instance=\"b\"} NaN 1700000000\n", true},
		{"bad value", a + "m{instance=\"b\"} one 1700000000\n", true},
		{"gzip", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := gzPath
			if c.text != "" {
				path = writeFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".om", c.text)
			}
			x, err := IndexText(path, IngestOptions{})
			if !c.atBatch {
				if !errors.Is(err, ErrNoStream) {
					t.Fatalf("IndexText: %v, want an error wrapping ErrNoStream", err)
				}
				if c.name == "interleaved" && !strings.Contains(err.Error(), `instance "a" has lines at lines 1 and 3`) {
					t.Errorf("IndexText: %v, want the interleaving found at line 3", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("IndexText: %v, want the index (the batch shows what is wrong)", err)
			}
			defer x.Close()
			b, err := x.Find(indexedNames(t, x))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.ReadBatch(b, 1<<20); !errors.Is(err, ErrNoStream) {
				t.Fatalf("ReadBatch: %v, want an error wrapping ErrNoStream", err)
			}
		})
	}
}

// oddNamesText is a file grouped by instance whose instances are not in
// name order and have names of odd bytes (escaped quotes, backslashes and
// newlines, UTF-8, a prefix of another, upper case that sorts before
// lower), a 3 MiB name, none (the file's own instance) and runs of one and
// of several lines.
func oddNamesText(n int) string {
	var b strings.Builder
	odd := []string{`a\"b`, `c\\d`, `e\nf`, "é☃", "a", "a:1", "Z", "tab\tx", strings.Repeat("long", 3<<20/4)}
	for i := range n {
		name := fmt.Sprintf("host-%04d", (i*7919)%n)
		if i < len(odd) {
			name = odd[i]
		}
		fmt.Fprintf(&b, "node_memory_MemAvailable_bytes{instance=\"%s\"} %d 1700000000\n", name, 1000+i)
		if i%3 == 0 {
			fmt.Fprintf(&b, "node_memory_MemTotal_bytes{instance=\"%s\",job=\"node\"} %d 1700000000\n", name, 5000+i)
			fmt.Fprintf(&b, "node_memory_MemAvailable_bytes{instance=\"%s\"} %d 1700000060\n", name, 900+i)
		}
		if i == n/2 {
			b.WriteString("node_load1 0.5 1700000000\n")
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// The index kept on disk, in sorted chunks merged in more than one pass,
// gives the instances, the batches and what each batch holds that the
// index kept in memory gives.
func TestIndexOnDiskGivesWhatMemoryGives(t *testing.T) {
	path := writeFile(t, t.TempDir(), "fleet.om", oddNamesText(300))
	inMem, err := indexText(path, IngestOptions{}, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer inMem.Close()
	// Chunks of 3 runs: 101 of them, merged 64 at a time, then the rest.
	onDisk, err := indexText(path, IngestOptions{}, 3, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer onDisk.Close()
	// The 3 MiB name makes a chunk of its own.
	byBytes, err := indexText(path, IngestOptions{}, 1<<30, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer byBytes.Close()
	if inMem.disk != nil || onDisk.disk == nil || byBytes.disk == nil {
		t.Fatalf("on disk: %v, %v, %v; want only the last two", inMem.disk != nil, onDisk.disk != nil, byBytes.disk != nil)
	}
	if inMem.Len() != 301 {
		t.Fatalf("%d instances indexed, want 301", inMem.Len())
	}
	whole, _, err := ReadMem(path, IngestOptions{}, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := whole.Instances()
	if got := indexedNames(t, inMem); !reflect.DeepEqual(got, want) {
		t.Fatalf("indexed in memory: %d instances, the whole file has %d", len(got), len(want))
	}
	batches := func(x *TextIndex) []TextBatch {
		var bs []TextBatch
		if err := x.Batches(16, func(b TextBatch) error {
			bs = append(bs, b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return bs
	}
	wantB := batches(inMem)
	for _, x := range []*TextIndex{onDisk, byBytes} {
		if x.Len() != inMem.Len() {
			t.Fatalf("%d instances indexed on disk, %d in memory", x.Len(), inMem.Len())
		}
		gotB := batches(x)
		if len(gotB) != len(wantB) {
			t.Fatalf("%d batches on disk, %d in memory", len(gotB), len(wantB))
		}
		for i := range wantB {
			if !reflect.DeepEqual(gotB[i], wantB[i]) {
				t.Fatalf("batch %d on disk holds %.200q, in memory %.200q", i, gotB[i].Names, wantB[i].Names)
			}
			m, err := x.ReadBatch(gotB[i], 64<<20)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			for _, in := range gotB[i].Names {
				if got, want := memContents(t, m, in), memContents(t, whole, in); got != want {
					t.Fatalf("batch %d: instance %.100q holds\n%.300s\nread whole it holds\n%.300s", i, in, got, want)
				}
			}
		}
		some := []string{want[5], want[0], want[len(want)-1], want[5]}
		got, err := x.Find(some)
		if err != nil {
			t.Fatal(err)
		}
		wantF, _ := inMem.Find(some)
		if !reflect.DeepEqual(got, wantF) {
			t.Errorf("found on disk %.200q, in memory %.200q", got.Names, wantF.Names)
		}
		if _, err := x.Find([]string{"host-0001", "nowhere"}); err == nil || !strings.Contains(err.Error(), `"nowhere" is not in`) {
			t.Errorf("finding an instance the file does not have: %v, want an error naming it", err)
		}
	}
}

// An instance whose lines are in two places is found on disk as in memory,
// whichever chunks its two runs are in.
func TestIndexOnDiskFindsRepeatedInstance(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		at          int // the line of the instance's second run (its first is line 1)
		chunkRuns   int
		wantInError string
	}{
		{5, 1 << 30, `instance "dup" has lines at lines 1 and 5`},     // in memory
		{5, 3, `instance "dup" has lines at lines 1 and 5`},           // two chunks, the first pass
		{250, 3, `instance "dup" has lines at lines 1 and 250`},       // the second pass
		{250, 100, `instance "dup" has lines at lines 1 and 250`},     // one pass
		{101, 100, `instance "dup" has lines at lines 1 and 101`},     // the last chunk
		{300, 1 << 30, `instance "dup" has lines at lines 1 and 300`}, // in memory, the last run
	} {
		var b strings.Builder
		b.WriteString("m{instance=\"dup\"} 1 1700000000\n")
		for i := 2; i <= 300; i++ {
			name := fmt.Sprintf("h%03d", i)
			if i == c.at {
				name = "dup"
			}
			fmt.Fprintf(&b, "m{instance=\"%s\"} 1 1700000000\n", name)
		}
		path := writeFile(t, dir, fmt.Sprintf("dup-%d-%d.om", c.at, c.chunkRuns), b.String())
		x, err := indexText(path, IngestOptions{}, c.chunkRuns, 1<<30)
		if err == nil {
			x.Close()
			t.Errorf("second run at line %d, chunks of %d: indexed, want an error wrapping ErrNoStream", c.at, c.chunkRuns)
			continue
		}
		if !errors.Is(err, ErrNoStream) || !strings.Contains(err.Error(), c.wantInError) {
			t.Errorf("second run at line %d, chunks of %d: %v, want an error wrapping ErrNoStream saying %s", c.at, c.chunkRuns, err, c.wantInError)
		}
	}
}

// Where no temporary file can be made, the index stays in memory and
// gives what it gives there.
func TestIndexWithoutTempFileStaysInMemory(t *testing.T) {
	path := writeFile(t, t.TempDir(), "fleet.om", oddNamesText(40))
	want, err := indexText(path, IngestOptions{}, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	x, err := indexText(path, IngestOptions{}, 3, 1<<30)
	if err != nil {
		t.Fatalf("indexing with no temporary file: %v, want the index in memory", err)
	}
	defer x.Close()
	if x.disk != nil || !x.noDisk {
		t.Fatalf("on disk: %v, no disk: %v; want the index in memory", x.disk != nil, x.noDisk)
	}
	if got, want := indexedNames(t, x), indexedNames(t, want); !reflect.DeepEqual(got, want) {
		t.Errorf("indexed %.200q, want %.200q", got, want)
	}
}

// Snapshots of a fleet saved one after the other, past a chunk of
// instances, are found as the second begins, not once the whole file is
// indexed on disk: what follows (here a line that would fail the scan) is
// not read.
func TestIndexOnDiskFindsConcatenatedSnapshotsEarly(t *testing.T) {
	var b strings.Builder
	for snap := range 3 {
		for i := range 100 {
			fmt.Fprintf(&b, "m{instance=\"h%03d\"} 1 %d\n", i, 1700000000+60*snap)
		}
	}
	b.WriteString("m{ 3\n")
	path := writeFile(t, t.TempDir(), "snapshots.om", b.String())
	x, err := indexText(path, IngestOptions{}, 16, 1<<30)
	if err == nil {
		x.Close()
		t.Fatal("indexed, want an error wrapping ErrNoStream")
	}
	if !errors.Is(err, ErrNoStream) || !strings.Contains(err.Error(), `instance "h000" has lines at lines 1 and 101`) {
		t.Errorf("%v, want the second snapshot found at line 101", err)
	}
}
