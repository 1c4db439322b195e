package prom

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
)

// MetricNameLabel is the label that holds a series' metric name in the
// answers of the HTTP API.
const MetricNameLabel = "__name__"

// Labels is the label set of a series as the HTTP API answers it, the
// metric name under MetricNameLabel.
type Labels map[string]string

// Point is one point of a series: the time in milliseconds since the Unix
// epoch and the value.
type Point struct {
	T int64
	V float64
}

// Equal reports whether two label sets hold the same labels.
func (l Labels) Equal(o Labels) bool {
	if len(l) != len(o) {
		return false
	}
	for k, v := range l {
		if w, ok := o[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// seed keys the hashes of label sets; they live in this process only.
var seed = maphash.MakeSeed()

// hash is a hash of the label set, the same for equal sets. Sets of equal
// hash may still differ: compare them with Equal.
func (l Labels) hash() uint64 {
	names := make([]string, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	slices.Sort(names)
	var h maphash.Hash
	h.SetSeed(seed)
	for _, k := range names {
		// A name or value never holds the byte 0xff in valid UTF-8, so
		// the separators keep {a="bc"} from hashing as {ab="c"}.
		_, _ = h.WriteString(k)
		_ = h.WriteByte(0xff)
		_, _ = h.WriteString(l[k])
		_ = h.WriteByte(0xff)
	}
	return h.Sum64()
}

// String writes the set as name{a="1", b="2"}: the metric name, then the
// other labels sorted, values quoted as Go strings; "{}" for an empty set.
// It is what answers are sorted by.
func (l Labels) String() string {
	name, hasName := l[MetricNameLabel]
	pairs := make([]string, 0, len(l))
	for k, v := range l {
		if k != MetricNameLabel {
			pairs = append(pairs, k+"="+strconv.Quote(v))
		}
	}
	if len(pairs) == 0 {
		if hasName {
			return name
		}
		return "{}"
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ", ") + "}"
}
