package diagnose

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// unmemoisedMissing makes the notes of rules not evaluated for want of a
// series as evaluate made them before the memo: for each rule, the first
// need in lacks, its HowTo advised and fitted, added in rule order.
func unmemoisedMissing(in *Input, rules []Rule) []sample.Note {
	var skipped missingNotes
	for _, r := range rules {
		m := r.Meta()
		if m.Trend && in.Window == nil {
			continue
		}
		for _, n := range m.Needs {
			if in.has(n.Series) {
				continue
			}
			how := n.HowTo
			if a, ok := r.(advisor); ok {
				how = a.Advise(in, how)
			}
			skipped.add(&m, n.Series, fitHowTo(how, in))
			break
		}
	}
	return skipped.notes()
}

// The notes of rules missing their series, kept for each set of missing
// series, are those made anew for each instance: on inputs that miss
// different series, with and without a window, read from Prometheus or
// not, with a process whose preload library's stats were not read (an
// advisor rewrites the HowTo), each judged twice in turn by one rule set.
func TestMissingNotesMemoEqualsUnmemoised(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	type variant struct {
		name    string
		metrics []string
		window  bool
		source  string
		preload bool
	}
	variants := []variant{
		{name: "available only", metrics: []string{"node_memory_MemAvailable_bytes"}, window: true, source: "store"},
		{name: "meminfo", metrics: []string{"node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes", "node_memory_MemFree_bytes"}, window: true, source: "store"},
		{name: "meminfo from prometheus", metrics: []string{"node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes", "node_memory_MemFree_bytes"}, window: true, source: "prometheus"},
		{name: "vmstat", metrics: []string{"node_memory_MemTotal_bytes", "node_vmstat_oom_kill", "node_vmstat_pgscan_direct"}, window: true, source: "store"},
		{name: "snapshot", metrics: []string{"node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes"}, source: "check"},
		{name: "snapshot with a preloaded process", metrics: []string{"node_memory_MemTotal_bytes"}, source: "check", preload: true},
		{name: "window with a preloaded process", metrics: []string{"node_memory_MemTotal_bytes"}, window: true, source: "store", preload: true},
		{name: "nothing", window: true, source: "store"},
	}
	input := func(v variant) *Input {
		s := &sample.Snapshot{Time: t0}
		for i, name := range v.metrics {
			s.Add(name, float64(1e9+i))
		}
		in := &Input{Host: model.Analyze(s, v.source)}
		if v.preload {
			in.Host.Processes = append(in.Host.Processes, model.Process{PID: 42, Comm: "app", Preload: true})
		}
		if v.window {
			w := &sample.Window{Instance: "host-1:9100", From: t0, To: t0}
			for i, name := range v.metrics {
				w.Add(&sample.Series{Name: name, Points: []sample.Point{{T: t0.UnixMilli(), V: float64(1e9 + i)}}})
			}
			in.Window = w
		}
		return in
	}
	rs := newRuleSet(registry)
	distinct := map[string]bool{}
	for round := range 2 {
		for _, v := range variants {
			want := unmemoisedMissing(input(v), registry)
			_, got, _ := evaluate(input(v), rs)
			if len(got) == len(want) && cap(got) != len(got) {
				// Shared by the reports of the same missing series: an
				// append to one must copy, not write into the others'.
				t.Errorf("round %d, %s: %d notes with room for %d: appending to one report's would write into another's", round, v.name, len(got), cap(got))
			}
			got = got[:min(len(got), len(want))]
			if len(want) == 0 {
				t.Fatalf("%s: no rule misses a series: the case tests nothing", v.name)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round %d, %s: notes\n%+v\nwant (made anew)\n%+v", round, v.name, got, want)
			}
			distinct[fmt.Sprint(want)] = true
		}
	}
	if len(distinct) < 5 {
		t.Errorf("the variants miss %d different sets of series, want at least 5 for the memo to tell apart", len(distinct))
	}
	rs.memo.mu.Lock()
	kept := rs.memo.n
	rs.memo.mu.Unlock()
	if kept == 0 || kept > len(variants) {
		t.Errorf("the memo kept %d lists for %d variants judged twice, want between 1 and %d", kept, len(variants), len(variants))
	}
}

// The memo is bounded: past maxMissingMemo lists, the notes are made anew
// and not kept.
func TestMissingNotesMemoBounded(t *testing.T) {
	rs := newRuleSet(registry)
	var i0 int
	for i, m := range rs.metas {
		if len(m.Needs) > 0 {
			i0 = i
			break
		}
	}
	for k := range maxMissingMemo + 10 {
		key := []missed{{rule: i0, need: 0, how: "fix " + string(rune('a'+k%26)) + string(rune('a'+k/26))}}
		got := rs.memo.notes(rs, key)
		if want := makeMissingNotes(rs, key); !reflect.DeepEqual(got, want) || len(got) != 1 || got[0].Fix != key[0].how {
			t.Fatalf("list %d: notes %+v, want %+v", k, got, want)
		}
	}
	if rs.memo.n != maxMissingMemo {
		t.Errorf("the memo kept %d lists, want at most %d", rs.memo.n, maxMissingMemo)
	}
}
