package dotnet

// The runtime's System.Runtime counters (an EventSource's EventCounters,
// .NET Core 3.0 on), sent as "EventCounters" events every interval the
// session asks for (EventCounterIntervalSec), one event per counter: a
// self-describing payload {Payload: {Name, DisplayName, Mean or
// Increment, ..., DisplayUnits}}. Measured on 3.1.23: gc-heap-size and
// working-set in MB (10^6 bytes), gen-0-size, gen-1-size, gen-2-size,
// loh-size and alloc-rate in bytes, time-in-gc in %, and the collection
// counts, cpu-usage, thread pool, lock contention, exception, assembly
// and timer counts. A runtime hosted as a component (no Main) has no
// such source unless the host creates it.

import (
	"maps"
	"math"
	"strconv"
)

// CountersProvider is the runtime's counters' EventSource.
const CountersProvider = "System.Runtime"

// CounterProvider asks for the System.Runtime counters every intervalSec
// seconds.
func CounterProvider(intervalSec int) Provider {
	return Provider{Name: CountersProvider, Keywords: 0xFFFFFFFF, Level: LevelVerbose,
		Filter: "EventCounterIntervalSec=" + strconv.Itoa(max(intervalSec, 1))}
}

// maxCounters bounds the counters kept (3.1 publishes 19).
const maxCounters = 128

// Counters are the System.Runtime counters a session saw: the latest
// value of each counter that is a mean (sizes, percentages), the sum of
// the increments of the incrementing ones (alloc-rate: bytes allocated
// over the session), both in bytes where the counter is in MB or B.
type Counters struct {
	Last, Sum map[string]float64
	// Reports counts the counter events read, Malformed the ones that
	// could not be decoded.
	Reports, Malformed int
}

// NewCounters returns empty counters.
func NewCounters() *Counters { return &Counters{Last: map[string]float64{}, Sum: map[string]float64{}} }

// Add decodes one event (others are ignored).
func (c *Counters) Add(e *Event) {
	if e.Meta.Provider != CountersProvider || e.Meta.Name != "EventCounters" {
		return
	}
	var name, units string
	var mean, inc float64
	var hasMean, hasInc bool
	ok := e.Decode(func(v Value) {
		switch v.Name {
		case "Payload.Name":
			name = v.Str
		case "Payload.Mean":
			mean, hasMean = v.Num, true
		case "Payload.Increment":
			inc, hasInc = v.Num, true
		case "Payload.DisplayUnits":
			units = v.Str
		}
	})
	val := mean
	if hasInc {
		val = inc
	}
	if !ok || name == "" || len(name) > 64 || hasMean == hasInc || math.IsNaN(val) || math.IsInf(val, 0) {
		c.Malformed++
		return
	}
	_, seenL := c.Last[name]
	_, seenS := c.Sum[name]
	if !seenL && !seenS && len(c.Last)+len(c.Sum) >= maxCounters {
		return
	}
	switch units {
	case "MB":
		val *= 1e6
	case "KB":
		val *= 1e3
	}
	c.Reports++
	if hasInc {
		c.Sum[name] += val
	} else {
		c.Last[name] = val
	}
}

// Clone returns a copy of c.
func (c *Counters) Clone() *Counters {
	d := *c
	d.Last, d.Sum = maps.Clone(c.Last), maps.Clone(c.Sum)
	return &d
}

// Get returns a mean counter's latest value.
func (c *Counters) Get(name string) (float64, bool) {
	v, ok := c.Last[name]
	return v, ok
}
