package store

import (
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memdoctor/memdoctor/internal/sample"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func openTest(tb testing.TB, opt Options) (*Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "store.db")
	st, err := Open(path, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st, path
}

// model is what a store should hold: every appended sample by series key.
type model struct {
	series map[string]*sample.Series
}

func newModel() *model { return &model{series: map[string]*sample.Series{}} }

func (m *model) add(sc *sample.Snapshot) {
	seen := map[string]bool{}
	for _, x := range sc.Metrics {
		k := x.Key()
		if seen[k] {
			continue // first value wins
		}
		seen[k] = true
		s := m.series[k]
		if s == nil {
			s = &sample.Series{Name: x.Name, Labels: x.Labels}
			m.series[k] = s
		}
		s.Points = append(s.Points, sample.Point{T: sc.Time.UnixMilli(), V: x.Value})
	}
}

// want is what Select should return for q, computed without the store.
func (m *model) want(q Query) []*sample.Series {
	from, to := q.bounds()
	step := q.Step.Milliseconds()
	var out []*sample.Series
	for _, s := range m.series {
		if len(q.Names) > 0 && !slices.Contains(q.Names, s.Name) || !matches(s.Labels, q.Match) {
			continue
		}
		var pts []sample.Point
		for _, p := range s.Points {
			if p.T >= from && p.T <= to {
				pts = append(pts, p)
			}
		}
		if len(pts) == 0 {
			continue
		}
		r := &sample.Series{Name: s.Name, Labels: s.Labels}
		if step == 0 {
			r.Points = pts
			out = append(out, r)
			continue
		}
		groups := map[int64][]sample.Point{}
		var keys []int64
		for _, p := range pts {
			k := (p.T - from) / step
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], p)
		}
		for _, k := range keys {
			g := groups[k]
			mx, mn, sum := math.Inf(-1), math.Inf(1), 0.0
			for _, p := range g {
				mx, mn, sum = math.Max(mx, p.V), math.Min(mn, p.V), sum+p.V
			}
			r.Points = append(r.Points, g[len(g)-1])
			r.Max, r.Min, r.Mean = append(r.Max, mx), append(r.Min, mn), append(r.Mean, sum/float64(len(g)))
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Labels.String() < out[j].Labels.String()
	})
	return out
}

// sameSeries compares exactly (float bits, so NaN equals NaN and -0 is not
// 0) and fast; cmp.Diff then explains a difference.
func sameSeries(a, b []*sample.Series) bool {
	if len(a) != len(b) {
		return false
	}
	bitsEq := func(x, y []float64) bool {
		return (x == nil) == (y == nil) && slices.EqualFunc(x, y, func(p, q float64) bool { return math.Float64bits(p) == math.Float64bits(q) })
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Labels.String() != y.Labels.String() || len(x.Points) != len(y.Points) ||
			!bitsEq(x.Max, y.Max) || !bitsEq(x.Min, y.Min) || !bitsEq(x.Mean, y.Mean) {
			return false
		}
		for j := range x.Points {
			if x.Points[j].T != y.Points[j].T || math.Float64bits(x.Points[j].V) != math.Float64bits(y.Points[j].V) {
				return false
			}
		}
	}
	return true
}

// churn changes the series set of a snapshot the way hosts do: a process
// vanishes for a while, a new one appears, and a collector bug repeats a
// series (the first value must win).
func churn(sc *sample.Snapshot, i int) {
	if i%50 >= 20 && i%50 < 30 {
		sc.Metrics = slices.DeleteFunc(sc.Metrics, func(m sample.Metric) bool {
			return m.Name == "memdoctor_process_rss_bytes"
		})
	}
	if i%40 >= 25 {
		sc.Add("memdoctor_test_new_series", float64(i), "pid", "4242", "comm", "a \"quoted\"\nname\\x")
	}
	if i%77 == 3 {
		sc.AddMetric(sample.Metric{Name: sc.Metrics[0].Name, Labels: sc.Metrics[0].Labels, Value: -1})
	}
	if i%13 == 0 {
		sc.Add("memdoctor_test_special", []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-300, math.MaxFloat64}[i%6])
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	base := captureSnapshot(t, "dying-cgroups-6.18-x86_64-hybrid.txtar")
	// A 10-minute chunk range: 40 samples per chunk at 15 s, many cuts.
	st, path := openTest(t, Options{ChunkRange: 10 * time.Minute})
	sm := newSim(base, t0.Add(7*time.Second), 15*time.Second, 7)
	sm.jitter = 3 * time.Millisecond
	m := newModel()
	// Single appends (the recorder) and batches (ingest), some crossing
	// several chunk ranges in one call.
	for i, batch := 0, 0; i < 400; batch++ {
		n := []int{1, 1, 3, 97, 1, 40, 2}[batch%7]
		var scs []*sample.Snapshot
		for range n {
			sc := sm.next()
			churn(sc, i)
			m.add(sc)
			scs = append(scs, sc)
			i++
		}
		if err := st.Append("host-a", scs...); err != nil {
			t.Fatal(err)
		}
	}
	last := t0.Add(400 * 15 * time.Second)
	queries := []Query{
		{},
		{From: t0, To: last},
		{Names: []string{"node_memory_MemFree_bytes", "memdoctor_process_rss_bytes", "memdoctor_test_new_series"}},
		{Names: []string{"node_cpu_seconds_total"}, Match: []string{"mode", "idle"}, From: t0.Add(33 * time.Minute), To: t0.Add(71*time.Minute + 15*time.Second)},
		{Step: time.Minute},
		{Step: 7 * time.Minute, From: t0.Add(3 * time.Minute), To: t0.Add(90 * time.Minute)},
		{Step: time.Hour, From: t0.Add(-time.Hour)},
		{Names: []string{"memdoctor_test_special"}, Step: 2 * time.Minute},
		{From: last.Add(-4 * time.Minute)}, // the head only
		{From: last.Add(time.Hour)},        // nothing
	}
	check := func(st *Store, label string) {
		t.Helper()
		for _, q := range queries {
			got, err := st.Select(q)
			if err != nil {
				t.Fatalf("%s: Select(%+v): %v", label, q, err)
			}
			want := m.want(q)
			if sameSeries(got, want) {
				continue
			}
			if diff := cmp.Diff(got, want, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })); diff != "" {
				t.Errorf("%s: Select(%+v) (-got +want):\n%s", label, q, diff)
			}
		}
	}
	check(st, "writer")
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.HeadSamples == 0 || stats.Samples == stats.HeadSamples {
		t.Errorf("stats %+v: want samples both in chunks and in the head", stats)
	}
	// Another process' view, and the head reloaded from disk.
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	check(ro, "read-only")
	// The reader follows the writer's later appends (incrementally, then
	// across a cut).
	for range 50 {
		sc := sm.next()
		m.add(sc)
		if err := st.Append("host-a", sc); err != nil {
			t.Fatal(err)
		}
		if _, err := ro.Select(Query{Names: []string{"node_memory_MemFree_bytes"}}); err != nil {
			t.Fatal(err)
		}
	}
	check(ro, "read-only after appends")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	check(st2, "reopened")
}

func TestAppendOutOfOrder(t *testing.T) {
	t.Parallel()
	st, _ := openTest(t, Options{})
	mk := func(d time.Duration, v float64) *sample.Snapshot {
		sc := &sample.Snapshot{Time: t0.Add(d)}
		sc.Add("x", v)
		return sc
	}
	if err := st.Append("h", mk(0, 1), mk(time.Minute, 2)); err != nil {
		t.Fatal(err)
	}
	for _, scs := range [][]*sample.Snapshot{
		{mk(30*time.Second, 3)},
		{mk(time.Minute, 3)}, // same time: a duplicate snapshot
		{mk(2*time.Minute, 3), mk(90*time.Second, 4)},
		{mk(5*time.Hour, 3), mk(5*time.Hour, 4)}, // across a cut, then rejected
	} {
		err := st.Append("h", scs...)
		if !errors.Is(err, ErrOutOfOrder) {
			t.Errorf("Append(%v) = %v, want ErrOutOfOrder", scs[0].Time, err)
		}
	}
	// Nothing of a rejected call was kept.
	got, err := st.Select(Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*sample.Series{{Name: "x", Points: []sample.Point{{T: t0.UnixMilli(), V: 1}, {T: t0.Add(time.Minute).UnixMilli(), V: 2}}}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("after rejected appends (-got +want):\n%s", diff)
	}
	// Other instances have their own order.
	if err := st.Append("other", mk(0, 1)); err != nil {
		t.Errorf("Append(other instance, older time) = %v", err)
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	st, _ := openTest(t, Options{ChunkRange: time.Hour})
	// "gone" stops after 30 minutes (a vanished process); "x" goes on for
	// 3 hours, so gone's last sample lies in a chunk, x's in the head.
	for i := range 180 {
		sc := &sample.Snapshot{Time: t0.Add(time.Duration(i) * time.Minute)}
		sc.Add("x", float64(i), "a", "1")
		if i < 30 {
			sc.Add("gone", float64(100+i))
		}
		if err := st.Append("h", sc); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		t      time.Time
		maxAge time.Duration
		want   *sample.Snapshot
	}{
		{time.Time{}, 0, snapshotAt(t0.Add(179*time.Minute), "gone", 129, "x", 179)},
		{time.Time{}, 10 * time.Minute, snapshotAt(t0.Add(179*time.Minute), "x", 179)},
		{t0.Add(20*time.Minute + 30*time.Second), time.Minute, snapshotAt(t0.Add(20*time.Minute), "gone", 120, "x", 20)},
		{t0.Add(100 * time.Minute), 0, snapshotAt(t0.Add(100*time.Minute), "gone", 129, "x", 100)},
		{t0.Add(100 * time.Minute), time.Hour, snapshotAt(t0.Add(100*time.Minute), "x", 100)},
	}
	for _, tt := range tests {
		got, err := st.Latest("h", tt.t, tt.maxAge)
		if err != nil {
			t.Fatalf("Latest(%v, %v): %v", tt.t, tt.maxAge, err)
		}
		if diff := cmp.Diff(got, tt.want, cmpopts.IgnoreUnexported(sample.Snapshot{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Latest(%v, %v) (-got +want):\n%s", tt.t, tt.maxAge, diff)
		}
	}
	if _, err := st.Latest("h", t0.Add(-time.Second), 0); !errors.Is(err, ErrNoData) {
		t.Errorf("Latest before the first sample: %v, want ErrNoData", err)
	}
	if _, err := st.Latest("nobody", time.Time{}, 0); !errors.Is(err, ErrNoData) {
		t.Errorf("Latest of an unknown instance: %v, want ErrNoData", err)
	}
}

// snapshot builds the snapshot Latest returns: name, value pairs; "x" has a="1".
func snapshotAt(at time.Time, nv ...any) *sample.Snapshot {
	sc := &sample.Snapshot{Time: at, Instance: "h"}
	for i := 0; i < len(nv); i += 2 {
		var ls sample.Labels
		if nv[i] == "x" {
			ls = sample.L("a", "1")
		}
		sc.AddMetric(sample.Metric{Name: nv[i].(string), Labels: ls, Value: float64(nv[i+1].(int))})
	}
	return sc
}

func TestInstancesTimeRangeDelete(t *testing.T) {
	t.Parallel()
	st, path := openTest(t, Options{ChunkRange: time.Hour})
	for i := range 300 {
		sc := &sample.Snapshot{Time: t0.Add(time.Duration(i) * time.Minute)}
		sc.Add("x", float64(i))
		if i < 90 {
			sc.Add("early", 1, "pid", "1") // only in the first chunks
		}
		if err := st.Append("b", sc); err != nil {
			t.Fatal(err)
		}
		if i < 10 {
			if err := st.Append("a", sc); err != nil {
				t.Fatal(err)
			}
		}
	}
	insts, err := st.Instances()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(insts, []string{"a", "b"}); diff != "" {
		t.Errorf("Instances (-got +want):\n%s", diff)
	}
	from, to, err := st.TimeRange("b")
	if err != nil || !from.Equal(t0) || !to.Equal(t0.Add(299*time.Minute)) {
		t.Errorf("TimeRange(b) = %v, %v, %v; want %v, %v", from, to, err, t0, t0.Add(299*time.Minute))
	}
	if _, err := st.Select(Query{}); err == nil || !strings.Contains(err.Error(), "2 instances") {
		t.Errorf("Select without instance in a 2-instance store: %v, want an error naming the instances", err)
	}
	// Chunks of b: hours 0-3 (4 of x, 2 of early); a: its 10 minutes are
	// still in its head and stay.
	n, err := st.DeleteBefore(t0.Add(2 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("DeleteBefore removed %d chunks, want 4 (x and early of hours 0 and 1)", n)
	}
	from, _, err = st.TimeRange("b")
	if err != nil || !from.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("TimeRange(b) after delete: from %v, %v; want %v", from, err, t0.Add(2*time.Hour))
	}
	got, err := st.Select(Query{Instance: "b", Names: []string{"early"}})
	if err != nil || len(got) != 0 {
		t.Errorf("early after delete: %v, %v; want nothing", got, err)
	}
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// a: x, early; b: x (early had no samples left and went).
	if stats.Series != 3 || stats.Samples != 10*2+180 {
		t.Errorf("stats after delete %+v: want 3 series, %d samples", stats, 10*2+180)
	}
	// The writer resolves series again after the delete changed them.
	sc := &sample.Snapshot{Time: t0.Add(300 * time.Minute)}
	sc.Add("early", 2, "pid", "1")
	if err := st.Append("b", sc); err != nil {
		t.Fatal(err)
	}
	// Everything of b goes; a's head stays.
	if _, err := st.DeleteBefore(t0.Add(100 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.Select(Query{Instance: "a"}); err != nil || len(got) != 2 {
		t.Errorf("instance a after deleting b's chunks: %d series, %v; want 2", len(got), err)
	}
	if err := ro.Append("a", sc); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Append on a read-only store: %v, want ErrReadOnly", err)
	}
}

func TestLabelsText(t *testing.T) {
	t.Parallel()
	for _, ls := range []sample.Labels{
		nil,
		sample.L("a", ""),
		sample.L("comm", `a "b" \c`+"\nd", "pid", "1"),
		sample.L("z", "}", "a", `{x="1"}`),
	} {
		text, err := labelsText(ls)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sample.ParseLabels(text)
		if err != nil {
			t.Fatalf("sample.ParseLabels(%q): %v", text, err)
		}
		if diff := cmp.Diff(got, ls, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("labels %q round trip (-got +want):\n%s", text, diff)
		}
	}
	unsorted := sample.Labels{{Name: "b", Value: "1"}, {Name: "a", Value: "2"}}
	if got, _ := labelsText(unsorted); got != `{a="2",b="1"}` {
		t.Errorf("labelsText(unsorted) = %s, want sorted", got)
	}
}

func TestHeadRowCodec(t *testing.T) {
	t.Parallel()
	enc, dec := newInstHead("h"), newInstHead("h")
	vals := []float64{0, 1, 1, 2.5, math.NaN(), math.Inf(1), 1e300, -3, 4096 * 123456}
	var rows [][]byte
	for r := range 30 {
		var rs []rowSample
		for id := int64(1); id <= 40; id++ {
			if (int(id)+r)%7 == 0 {
				continue // a series missing from some rows
			}
			v := vals[(int(id)*r/5)%len(vals)]
			hs := enc.get(id)
			hs.add(int64(r), v)
			rs = append(rs, rowSample{hs, math.Float64bits(v)})
		}
		rows = append(rows, enc.encodeRow(nil, rs))
	}
	for r, row := range rows {
		if err := dec.decodeRow(int64(r), row); err != nil {
			t.Fatalf("row %d: %v", r, err)
		}
	}
	for id, hs := range enc.series {
		d := dec.series[id]
		if d == nil || !cmp.Equal(d.chunk.Bytes(), hs.chunk.Bytes()) {
			t.Errorf("series %d: decoded head differs from the encoded one", id)
		}
	}
}

// FuzzHeadRow: a damaged head row is an error, never a panic.
func FuzzHeadRow(f *testing.F) {
	h := newInstHead("h")
	hs := h.get(3)
	hs.add(1, 42)
	f.Add(h.encodeRow(nil, []rowSample{{hs, math.Float64bits(42)}}))
	f.Add([]byte{0})
	f.Add([]byte{1, 2, 1, 1, 1, 0x34, 0xff})
	f.Fuzz(func(_ *testing.T, row []byte) {
		h := newInstHead("h")
		for i := range 3 {
			if h.decodeRow(int64(i), row) != nil {
				return
			}
		}
	})
}

func TestAppendTimestamp(t *testing.T) {
	t.Parallel()
	base := t0.UnixMilli()
	for ms := base - 3000; ms < base+200000; ms += 7 {
		s := string(appendTimestamp(nil, ms))
		f, err := parseFloat(s)
		if err != nil || int64(f*1000) != ms || int64(math.Round(f*1000)) != ms {
			t.Fatalf("timestamp %d written as %s reads back as %v", ms, s, f)
		}
	}
	if got := string(appendTimestamp(nil, 1700000000000)); got != "1700000000" {
		t.Errorf("whole second written as %s", got)
	}
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// A stepped read keeps only the step aggregates Keep names for a series
// (none for a name it lacks), each equal to the full read's.
func TestSelectKeepsNamedAggregates(t *testing.T) {
	t.Parallel()
	st, _ := openTest(t, Options{})
	for i := range 120 {
		if err := st.Append("h", snapshotAt(t0.Add(time.Duration(i)*15*time.Second), "a", i%7, "b", 100-i%5, "c", i)); err != nil {
			t.Fatal(err)
		}
	}
	q := Query{Instance: "h", From: t0, To: t0.Add(30 * time.Minute), Step: 2 * time.Minute}
	full, err := st.Select(q)
	if err != nil {
		t.Fatal(err)
	}
	q.Keep = map[string]sample.Aggregates{"a": sample.KeepMin, "b": sample.KeepMax | sample.KeepMean}
	lean, err := st.Select(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 3 || len(lean) != 3 {
		t.Fatalf("%d and %d series, want 3", len(full), len(lean))
	}
	for i, l := range lean {
		f := full[i]
		k := q.Keep[l.Name]
		if len(f.Points) != 15 || !slices.Equal(l.Points, f.Points) {
			t.Fatalf("%s: %d points, the full read %d (want 15, equal)", l.Name, len(l.Points), len(f.Points))
		}
		for _, c := range []struct {
			what      string
			bit       sample.Aggregates
			got, want []float64
		}{{"max", sample.KeepMax, l.Max, f.Max}, {"min", sample.KeepMin, l.Min, f.Min}, {"mean", sample.KeepMean, l.Mean, f.Mean}} {
			if k&c.bit == 0 && c.got != nil {
				t.Errorf("%s: %s kept, not asked for", l.Name, c.what)
			}
			if k&c.bit != 0 && !slices.Equal(c.got, c.want) {
				t.Errorf("%s: %s %v, the full read %v", l.Name, c.what, c.got, c.want)
			}
		}
	}
}

// Options.CacheKiB sets the page cache of the writer's and the readers'
// connections; left zero, both have the default 1 MiB.
func TestCacheKiB(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ kib, want int }{{0, -1024}, {64, -64}} {
		s, _ := openTest(t, Options{CacheKiB: c.kib})
		for name, db := range map[string]*sql.DB{"writer": s.wdb, "reader": s.rdb} {
			var got int
			if err := db.QueryRow("PRAGMA cache_size").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("CacheKiB %d: the %s's cache_size is %d, want %d", c.kib, name, got, c.want)
			}
		}
	}
}
