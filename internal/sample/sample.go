// Package sample holds the domain types every part of memdoctor shares:
// named series with labels, and timestamped snapshots of them. Host series use
// node_exporter's names and labels exactly; everything node_exporter lacks is
// named memdoctor_<area>_<name>_<unit>.
package sample

import (
	"iter"
	"sort"
	"strings"
	"time"
)

// Label is one name=value pair.
type Label struct {
	Name, Value string
}

// Labels is a label set sorted by name.
type Labels []Label

// L builds a sorted label set from name, value pairs. An odd trailing name is
// ignored.
func L(nv ...string) Labels {
	ls := make(Labels, 0, len(nv)/2)
	for i := 0; i+1 < len(nv); i += 2 {
		ls = append(ls, Label{nv[i], nv[i+1]})
	}
	// Insertion sort: label sets are a few pairs (sort.Slice sorts so few
	// the same way, after allocating for its reflection, on every metric).
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Name < ls[j-1].Name; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
	return ls
}

// Get returns the value of a label, or "".
func (ls Labels) Get(name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// String renders {a="1",b="2"}, or "" for no labels.
func (ls Labels) String() string {
	if len(ls) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(escape(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func escape(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// Kind says how a series behaves.
type Kind uint8

// Kinds of series.
const (
	Gauge Kind = iota
	Counter
	Untyped
)

// Metric is one value of one series.
type Metric struct {
	Name   string
	Labels Labels
	Value  float64
}

// Key identifies the series: name plus labels.
func (m Metric) Key() string { return m.Name + m.Labels.String() }

// Snapshot is every metric read at one instant from one instance.
type Snapshot struct {
	Time     time.Time
	Instance string
	Metrics  []Metric
	index    map[string][]int
}

// Add appends a metric.
func (s *Snapshot) Add(name string, v float64, labels ...string) {
	s.AddMetric(Metric{Name: name, Labels: L(labels...), Value: v})
}

// AddMetric appends a metric.
func (s *Snapshot) AddMetric(m Metric) {
	s.Metrics = append(s.Metrics, m)
	if s.index != nil {
		// Kept up to date: a collector that reads the snapshot between
		// adds would otherwise rebuild the whole index each time.
		s.index[m.Name] = append(s.index[m.Name], len(s.Metrics)-1)
	}
}

// smallSnapshot is the number of metrics up to which a snapshot is
// searched in order rather than indexed: an instance of a fleet's file
// has one or a few, and building its map, then hashing each name the
// model asks for, was a tenth of diagnosing 100,000 of them.
const smallSnapshot = 8

// small reports whether s is searched in order (never indexed).
func (s *Snapshot) small() bool { return s.index == nil && len(s.Metrics) <= smallSnapshot }

func (s *Snapshot) build() {
	if s.index != nil {
		return
	}
	// Sized by the snapshot: a map presized for 256 names costs ~17 KB, and
	// a fleet read from one file keeps one small snapshot per instance
	// (check's has some 390 names in 2,100 metrics).
	s.index = make(map[string][]int, min(len(s.Metrics), 512))
	// A collector adds a name's series together (the slab caches' six
	// series one name after another): one lookup a run of one name, and
	// the lists of all names in one array, each a run's length long (a
	// later run of a name, or a metric added later, grows its own list
	// out of the array).
	all := make([]int, len(s.Metrics))
	for i := 0; i < len(s.Metrics); {
		name := s.Metrics[i].Name
		j := i + 1
		for j < len(s.Metrics) && s.Metrics[j].Name == name {
			j++
		}
		idx, seen := s.index[name]
		if !seen {
			idx, all = all[:0:j-i], all[j-i:]
		}
		for k := i; k < j; k++ {
			idx = append(idx, k)
		}
		s.index[name] = idx
		i = j
	}
}

// Select returns every metric of a name whose labels include the given
// name, value pairs.
func (s *Snapshot) Select(name string, match ...string) []Metric {
	var out []Metric
	if s.small() {
		for _, m := range s.Metrics {
			if m.Name == name && m.Labels.matches(match) {
				out = append(out, m)
			}
		}
		return out
	}
	s.build()
	for _, i := range s.index[name] {
		if m := s.Metrics[i]; m.Labels.matches(match) {
			out = append(out, m)
		}
	}
	return out
}

// Each yields what Select returns, in its order, without making a slice
// of it: the model reads every slab cache's series once (a few hundred a
// series), and the copies Select made were most of what it allocated.
func (s *Snapshot) Each(name string, match ...string) iter.Seq[Metric] {
	return func(yield func(Metric) bool) {
		if s.small() {
			for i := range s.Metrics {
				if m := &s.Metrics[i]; m.Name == name && m.Labels.matches(match) && !yield(*m) {
					return
				}
			}
			return
		}
		s.build()
		for _, i := range s.index[name] {
			if m := &s.Metrics[i]; m.Labels.matches(match) && !yield(*m) {
				return
			}
		}
	}
}

// Count is how many metrics of a name s holds.
func (s *Snapshot) Count(name string) int {
	if s.small() {
		n := 0
		for i := range s.Metrics {
			if s.Metrics[i].Name == name {
				n++
			}
		}
		return n
	}
	s.build()
	return len(s.index[name])
}

// matches reports whether ls has every name, value pair of match.
func (ls Labels) matches(match []string) bool {
	for j := 0; j+1 < len(match); j += 2 {
		if ls.Get(match[j]) != match[j+1] {
			return false
		}
	}
	return true
}

// Get returns the value of the first metric of a name matching the labels.
// It stops at the first and allocates nothing: the model asks it for each
// process' every series (Select made a slice of the matches each time).
func (s *Snapshot) Get(name string, match ...string) (float64, bool) {
	if s.small() {
		for i := range s.Metrics {
			if m := &s.Metrics[i]; m.Name == name && m.Labels.matches(match) {
				return m.Value, true
			}
		}
		return 0, false
	}
	s.build()
	for _, i := range s.index[name] {
		if m := &s.Metrics[i]; m.Labels.matches(match) {
			return m.Value, true
		}
	}
	return 0, false
}

// Value returns Get's value, or 0 when absent.
func (s *Snapshot) Value(name string, match ...string) float64 {
	v, _ := s.Get(name, match...)
	return v
}

// Has reports whether any metric of the name exists.
func (s *Snapshot) Has(name string) bool {
	if s.small() {
		for i := range s.Metrics {
			if s.Metrics[i].Name == name {
				return true
			}
		}
		return false
	}
	s.build()
	return len(s.index[name]) > 0
}

// Names lists the distinct metric names, sorted.
func (s *Snapshot) Names() []string {
	s.build()
	out := make([]string, 0, len(s.index))
	for n := range s.index {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// UnsetHostName is what the kernel reports for a host whose name was never
// set (its default UTS nodename), as in an initramfs or a minimal container.
const UnsetHostName = "(none)"

// HostName is the name memdoctor shows and records for a host: its
// nodename, or "localhost" where none was set ("(none)" or empty), the
// name systemd and hostname(1) fall back to as well.
func HostName(nodename string) string {
	if nodename == "" || nodename == UnsetHostName {
		return "localhost"
	}
	return nodename
}
