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
