package source

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A series repeated at one time, interleaved with another, is held as one
// sample per series as it is read (before, every repeat was held until the
// end: 12 bytes each, 2.4 GB for a 1 GiB file), and the last value wins.
// The repeats the hostile corpus holds are read the same way.
func TestTextRepeatsHeldOnce(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, "a{instance=\"h\"} %d 1700000000\nb{instance=\"h\"} 1 1700000000\n", i)
	}
	fmt.Fprintf(&b, "a{instance=\"h\"} 7 1700000015\n")
	opt := IngestOptions{}.withDefaults()
	ms := newMemSink(t)
	w := newWriter(oneByOne(ms.sink), opt)
	p := newTextParser("f", "f", opt, time.Unix(1700000000, 0), w)
	if err := p.parse(strings.NewReader(b.String()), nil); err != nil {
		t.Fatal(err)
	}
	if p.buffered != 3 {
		t.Errorf("%d samples held for 3 distinct ones", p.buffered)
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	ss := ms.snapshots["h"]
	if len(ss) != 2 || len(ss[0].Metrics) != 2 || ss[0].Value("a") != 99_999 || ss[1].Value("a") != 7 {
		t.Fatalf("snapshots %v, want a=99999 and b=1, then a=7", ss)
	}
	stats := w.stats(KindOpenMetrics)
	if stats.Skipped != 199_998 || !strings.Contains(fmt.Sprint(stats.Notes), "199998 samples repeat a series at the same time") {
		t.Errorf("skipped %d, notes %v: want the 199,998 repeats counted", stats.Skipped, stats.Notes)
	}

	for _, name := range []string{"duplicate-samples.prom", "duplicate-interleaved.prom", "duplicate-alternating.prom", "duplicate-samples.om.gz"} {
		path := filepath.Join("../../testdata/hostile/openmetrics", name)
		ms := newMemSink(t)
		// A small buffer: the alternating file (one series at two times
		// in turn) is held, then compacted to its two samples.
		stats, err := Read(path, IngestOptions{BufferSamples: 10}, ms.sink)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if stats.Samples > 2 || stats.Skipped == 0 {
			t.Errorf("%s: %d samples written, %d skipped: want at most 2 written, the repeats skipped", name, stats.Samples, stats.Skipped)
		}
	}
}

// Input held because it is not in time order fails past MaxHeldSamples
// distinct samples, and a file past MaxSeries series fails, lenient or
// not, each naming the budget and what to do (before, both were held
// whatever their size).
func TestTextBudgets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	for _, s := range []string{"a", "b"} { // grouped by series, newest first
		for i := range 600 {
			fmt.Fprintf(&b, "%s 1 %d\n", s, 1700009000-15*i)
		}
	}
	grouped := writeFile(t, dir, "grouped.prom", b.String())
	b.Reset()
	for i := range 11 {
		fmt.Fprintf(&b, "m{i=\"%d\"} 1 1700000000\n", i)
	}
	wide := writeFile(t, dir, "wide.prom", b.String())
	for _, lenient := range []bool{false, true} {
		_, err := Read(grouped, IngestOptions{BufferSamples: 100, MaxHeldSamples: 1000, Lenient: lenient}, newMemSink(t).sink)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "more than 1000 samples") || !strings.Contains(err.Error(), "sort the file by time") {
			t.Errorf("lenient %v: grouped input past the budget: %v", lenient, err)
		}
		_, err = Read(wide, IngestOptions{MaxSeries: 10, Lenient: lenient}, newMemSink(t).sink)
		if !errors.As(err, &ie) || ie.Line != 11 || !strings.Contains(err.Error(), "more than 10 distinct series") {
			t.Errorf("lenient %v: 11 series past a budget of 10: %v", lenient, err)
		}
	}
	// Within the budgets both are read.
	if _, err := Read(grouped, IngestOptions{BufferSamples: 100, MaxHeldSamples: 1300}, newMemSink(t).sink); err != nil {
		t.Error(err)
	}
	if _, err := Read(wide, IngestOptions{MaxSeries: 11}, newMemSink(t).sink); err != nil {
		t.Error(err)
	}
}
