package store

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// ErrMemFull is wrapped when a Mem would hold more than its budget: the
// caller then reads the source into a Store instead.
var ErrMemFull = errors.New("more samples than the in-memory budget")

// Mem holds the samples of a source read once (an OpenMetrics file) in
// memory, and reads them as a Store holding the same samples reads them:
// the same series in the same order, the same steps and aggregates, the
// same latest values. It spares diagnose --from FILE the SQLite ingest and
// one query per instance and series (100,000 instances of one sample: 58 s
// of CPU through a temporary store). Its memory is bounded by its budget;
// Forget releases an instance once it is read. Once Sealed it may be read
// and Forgotten from several goroutines; appends are not safe concurrently.
type Mem struct {
	mu     sync.RWMutex
	insts  map[string]*memInst
	budget int64 // bytes the samples and series may take
	held   int64 // bytes they take, roughly
}

// memInst is one instance's series, in the order first seen until sorted
// for reading.
type memInst struct {
	series []memSeries
	keys   map[string]int32 // name + labels text → index in series (past memScanSeries)
	sorted bool
	newest int64 // time of the newest non-empty snapshot
	have   bool
}

// memSeries is one series: its name, the canonical text of its labels (as
// the series table holds it) and its samples in time order.
type memSeries struct {
	name, text string
	points     []sample.Point
}

// memSeriesBytes is roughly what a series takes besides its text and
// points (the series entry, the slice headers); memKeyBytes what its key
// in an instance's map takes besides the key's text.
const (
	memSeriesBytes = 64
	memKeyBytes    = 48
)

// memScanSeries is how many series of an instance are looked up by a scan
// before they are indexed in a map.
const memScanSeries = 16

// NewMem returns an empty Mem that holds at most budget bytes of samples
// and series (roughly: 16 a sample, about 112 and its names' length a
// series).
func NewMem(budget int64) *Mem {
	return &Mem{insts: map[string]*memInst{}, budget: budget}
}

// Held is roughly how many bytes the samples and series take.
func (m *Mem) Held() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.held
}

// AppendBatch adds the snapshots of several instances as Store.AppendBatch
// stores them: in time order per instance (a snapshot not newer than the
// instance's newest is ErrOutOfOrder), a series given twice in one
// snapshot keeping its first value, names and labels checked alike. Past
// the budget it fails with an error wrapping ErrMemFull. An error about
// one batch is a *BatchError; what was added before it stays.
func (m *Mem) AppendBatch(batches []Batch) error {
	for i, b := range batches {
		if b.Instance == "" {
			return &BatchError{i, errors.New("in-memory store: append: empty instance name")}
		}
	}
	for i, b := range batches {
		if err := m.append(b.Instance, b.Snapshots); err != nil {
			return &BatchError{i, err}
		}
	}
	return nil
}

func (m *Mem) append(instance string, snapshots []*sample.Snapshot) error {
	in := m.insts[instance]
	if in == nil {
		in = &memInst{}
		m.insts[instance] = in
		m.held += int64(len(instance)) + memSeriesBytes
	}
	for _, sc := range snapshots {
		if sc == nil {
			return errors.New("in-memory store: append: nil snapshot")
		}
		t := sc.Time.UnixMilli()
		if in.have && t <= in.newest {
			return fmt.Errorf("append to %q: snapshot at %s is not after the newest sample at %s: %w",
				instance, fmtMS(t), fmtMS(in.newest), ErrOutOfOrder)
		}
		if len(sc.Metrics) == 0 {
			continue
		}
		in.newest, in.have = t, true
		for _, mt := range sc.Metrics {
			i, err := m.lookup(in, mt)
			if err != nil {
				return err
			}
			s := &in.series[i]
			if n := len(s.points); n > 0 && s.points[n-1].T >= t {
				continue // the series twice in one snapshot: the first value stays
			}
			c := cap(s.points)
			s.points = append(s.points, sample.Point{T: t, V: mt.Value})
			m.held += 16 * int64(cap(s.points)-c)
		}
		if m.held > m.budget {
			return fmt.Errorf("%d MiB held at %s: %w", m.held>>20, fmtMS(t), ErrMemFull)
		}
	}
	return nil
}

// lookup returns the index of mt's series in in, adding it.
func (m *Mem) lookup(in *memInst, mt sample.Metric) (int32, error) {
	if err := checkName(mt.Name); err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	lt, err := labelsText(mt.Labels)
	if err != nil {
		return 0, fmt.Errorf("append: series %s: %w", mt.Name, err)
	}
	if len(in.series) < memScanSeries {
		// Of a few series (a fleet dump has one or a few an instance), a
		// scan is cheaper than a map, and takes no memory.
		for i, s := range in.series {
			if s.name == mt.Name && s.text == lt {
				return int32(i), nil
			}
		}
	} else {
		if in.keys == nil { // indexed from now on
			in.keys = make(map[string]int32, 2*len(in.series))
			for i, s := range in.series {
				in.keys[s.name+s.text] = int32(i)
				m.held += int64(len(s.name)+len(s.text)) + memKeyBytes
			}
		}
		if i, ok := in.keys[mt.Name+lt]; ok {
			return i, nil
		}
	}
	i := int32(len(in.series))
	in.series = append(in.series, memSeries{name: mt.Name, text: lt})
	m.held += int64(len(lt)) + memSeriesBytes
	if in.keys != nil {
		in.keys[mt.Name+lt] = i
		m.held += int64(len(mt.Name)+len(lt)) + memKeyBytes
	}
	in.sorted = false
	return i, nil
}

// Seal ends the appends: each instance's series are sorted for reading,
// and from now on reads may run concurrently.
func (m *Mem) Seal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, in := range m.insts {
		m.sort(in)
	}
}

// sort sorts in's series by name, then labels (the order of a Store's
// reads). Callers hold m.mu.
func (m *Mem) sort(in *memInst) {
	if in.sorted {
		return
	}
	slices.SortFunc(in.series, func(a, b memSeries) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.text, b.text)
	})
	if in.keys != nil { // read from now on, and the indices change
		for _, s := range in.series {
			m.held -= int64(len(s.name)+len(s.text)) + memKeyBytes
		}
		in.keys = nil
	}
	in.sorted = true
}

// Instances lists the instances, sorted.
func (m *Mem) Instances() ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.insts))
	for n := range m.insts {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// inst returns instance's series sorted by name, then labels (the order
// of a Store's reads), or an error wrapping ErrNoData.
func (m *Mem) inst(op, instance string) (*memInst, error) {
	m.mu.RLock()
	in := m.insts[instance]
	sorted := in != nil && in.sorted
	m.mu.RUnlock()
	if in == nil {
		return nil, fmt.Errorf("in-memory store: %s: instance %q: %w", op, instance, ErrNoData)
	}
	if !sorted {
		m.mu.Lock()
		m.sort(in)
		m.mu.Unlock()
	}
	return in, nil
}

// TimeRange returns the first and last sample time of an instance. An
// instance without samples is an error wrapping ErrNoData.
func (m *Mem) TimeRange(instance string) (from, to time.Time, err error) {
	in, err := m.inst("time range", instance)
	if err != nil {
		return from, to, err
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range in.series {
		if len(s.points) > 0 {
			lo, hi = min(lo, s.points[0].T), max(hi, s.points[len(s.points)-1].T)
		}
	}
	if lo > hi {
		return from, to, fmt.Errorf("in-memory store: instance %q: %w", instance, ErrNoData)
	}
	return time.UnixMilli(lo), time.UnixMilli(hi), nil
}

// Select reads series as Store.Select does. q.Instance must be given.
func (m *Mem) Select(q Query) ([]*sample.Series, error) {
	var out []*sample.Series
	err := m.SelectEach(q, func(ser *sample.Series) error {
		out = append(out, ser)
		return nil
	})
	return out, err
}

// SelectEach reads series as Store.SelectEach does: every series of
// q.Instance with a sample in [From, To], sorted by name then labels, raw
// or in steps.
func (m *Mem) SelectEach(q Query, fn func(*sample.Series) error) error {
	if len(q.Match)%2 != 0 {
		return fmt.Errorf("in-memory store: select: match %q: want name, value pairs", q.Match)
	}
	if q.Step < 0 {
		return fmt.Errorf("in-memory store: select: negative step %v", q.Step)
	}
	if q.Instance == "" {
		return errors.New("in-memory store: select: name an instance")
	}
	in, err := m.inst("select", q.Instance)
	if errors.Is(err, ErrNoData) {
		return nil // a Store has no series of an unknown instance
	}
	if err != nil {
		return err
	}
	from, to := q.bounds()
	for _, s := range in.series {
		if len(q.Names) > 0 && !slices.Contains(q.Names, s.name) {
			continue
		}
		ls, err := sample.ParseLabels(s.text)
		if err != nil {
			return fmt.Errorf("in-memory store: series %s: labels %q: %w", s.name, s.text, err)
		}
		if !matches(ls, q.Match) {
			continue
		}
		lo, _ := slices.BinarySearchFunc(s.points, from, func(p sample.Point, t int64) int { return cmpInt(p.T, t) })
		if lo == len(s.points) || s.points[lo].T > to {
			continue
		}
		b := newBuilder(&selected{name: s.name, labels: ls}, from, to, q.Step.Milliseconds(), q.keeps(s.name))
		for _, p := range s.points[lo:] {
			if p.T > to {
				break
			}
			b.add(p.T, p.V)
		}
		if ser := b.finish(); ser != nil {
			if err := fn(ser); err != nil {
				return err
			}
		}
	}
	return nil
}

// Latest returns the newest value of every series of an instance at or
// before t, as Store.Latest does.
func (m *Mem) Latest(instance string, t time.Time, maxAge time.Duration) (*sample.Snapshot, error) {
	at := int64(math.MaxInt64)
	if !t.IsZero() {
		at = t.UnixMilli()
	}
	in, err := m.inst("latest", instance)
	if err != nil {
		return nil, err
	}
	type found struct {
		s *memSeries
		p sample.Point
	}
	var got []found
	newest := int64(math.MinInt64)
	for i := range in.series {
		s := &in.series[i]
		k, _ := slices.BinarySearchFunc(s.points, at+1, func(p sample.Point, t int64) int { return cmpInt(p.T, t) })
		if at == math.MaxInt64 {
			k = len(s.points)
		}
		if k == 0 {
			continue
		}
		got = append(got, found{s, s.points[k-1]})
		newest = max(newest, s.points[k-1].T)
	}
	if len(got) == 0 {
		when := ""
		if !t.IsZero() {
			when = " at or before " + fmtMS(at)
		}
		return nil, fmt.Errorf("in-memory store: latest of %q%s: %w", instance, when, ErrNoData)
	}
	sc := &sample.Snapshot{Time: time.UnixMilli(newest), Instance: instance}
	for _, f := range got {
		if maxAge > 0 && f.p.T < newest-maxAge.Milliseconds() {
			continue
		}
		ls, err := sample.ParseLabels(f.s.text)
		if err != nil {
			return nil, fmt.Errorf("in-memory store: series %s: labels %q: %w", f.s.name, f.s.text, err)
		}
		sc.AddMetric(sample.Metric{Name: f.s.name, Labels: ls, Value: f.p.V})
	}
	return sc, nil
}

// Forget drops an instance that has been read: of many instances, only
// what is made of them is kept.
func (m *Mem) Forget(instance string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.insts[instance]
	if in == nil {
		return
	}
	for _, s := range in.series {
		m.held -= int64(16*cap(s.points)+len(s.text)) + memSeriesBytes
	}
	if in.keys != nil {
		for _, s := range in.series {
			m.held -= int64(len(s.name)+len(s.text)) + memKeyBytes
		}
	}
	m.held -= int64(len(instance)) + memSeriesBytes
	delete(m.insts, instance)
}
