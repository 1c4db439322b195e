package cgroups

import "sort"

// NearShare is how close to its limit a cgroup must be to be read in full
// whatever its size: within 10% of it.
const NearShare = 0.9

// Select picks the cgroups worth reading in full from every cgroup's
// Brief, once: the top n by usage, then every cgroup within NearShare of
// its limit, with OOM kills or with memory.high breaches (throttled) since
// it was made (one reading can tell no more), the nearest, most killed
// and most throttled first, at most extra of them. The hierarchy's root
// ("/") is never picked: it is the host.
func Select(all []Brief, n, extra int) []Brief {
	return pick(all, n, extra, func(b Brief) events { return events{oomKill: b.OOMKills, high: b.HighEvents} })
}

// events are the counters the selection ranks by, or their rise since the
// previous sample.
type events struct{ oomKill, oom, high, max int64 }

func (e events) any() bool { return e.oomKill > 0 || e.oom > 0 || e.high > 0 || e.max > 0 }

func pick(all []Brief, n, extra int, ev func(Brief) events) []Brief {
	cand := make([]Brief, 0, len(all))
	for _, b := range all {
		if b.Path != "/" {
			cand = append(cand, b)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool { return cand[i].Usage > cand[j].Usage })
	top := min(n, len(cand))
	out := append([]Brief(nil), cand[:top]...)
	type extraOne struct {
		b     Brief
		share float64
		ev    events
	}
	var more []extraOne
	for _, b := range cand[top:] {
		e, s := ev(b), share(b)
		if e.any() || s >= NearShare {
			more = append(more, extraOne{b, s, e})
		}
	}
	sort.SliceStable(more, func(i, j int) bool {
		a, b := more[i], more[j]
		switch {
		case a.share != b.share:
			return a.share > b.share
		case a.ev.oomKill != b.ev.oomKill:
			return a.ev.oomKill > b.ev.oomKill
		case a.ev.oom != b.ev.oom:
			return a.ev.oom > b.ev.oom
		case a.ev.high != b.ev.high:
			return a.ev.high > b.ev.high
		}
		return a.ev.max > b.ev.max
	})
	if len(more) > extra {
		more = more[:extra]
	}
	for _, m := range more {
		out = append(out, m.b)
	}
	return out
}

// EventHistory remembers, from one selection to the next, each cgroup's
// event counters (memory.events oom, oom_kill, high and max; v1's
// oom_control oom_kill and, with Reader.Failcnt, failcnt as max), so that
// a selection repeated at every sample (the recorder's) takes the cgroups
// whose events rose since the previous one, not every cgroup that had an
// event once. It holds the cgroups of the last selection with a counter
// above 0 only (a cgroup without one needs no entry: its counters were 0),
// so a cgroup that goes is forgotten at the next selection and the
// history never outgrows one scan. Not safe for concurrent selections.
type EventHistory struct {
	prev   map[string]events
	primed bool // a selection was made
}

// NewEventHistory returns an empty history: its first selection is the
// one-shot Select's (counters since the cgroups were made).
func NewEventHistory() *EventHistory { return &EventHistory{} }

// Select picks as the function Select does, with the events that rose
// since the previous call in place of the counters: the top n by usage,
// then every cgroup within NearShare of its limit or whose OOM kills,
// OOM invocations, memory.high breaches or memory.max hits rose, at most
// extra of them. A cgroup first seen (made since, or its counters read
// for the first time) rose by all its counters; one whose counter went
// down was made anew under the same path and rose by its count. The
// first call, with nothing to compare, is the one-shot Select. On a nil
// history it is the one-shot Select.
func (h *EventHistory) Select(all []Brief, n, extra int) []Brief {
	if h == nil {
		return Select(all, n, extra)
	}
	now := make(map[string]events, len(h.prev))
	for _, b := range all {
		if e := countersOf(b); e.any() {
			now[b.Path] = e
		}
	}
	var out []Brief
	if !h.primed {
		out = Select(all, n, extra)
	} else {
		out = pick(all, n, extra, func(b Brief) events {
			cur, was := now[b.Path], h.prev[b.Path]
			return events{oomKill: rise(cur.oomKill, was.oomKill), oom: rise(cur.oom, was.oom),
				high: rise(cur.high, was.high), max: rise(cur.max, was.max)}
		})
	}
	h.prev, h.primed = now, true
	return out
}

// Len is how many cgroups the history holds.
func (h *EventHistory) Len() int {
	if h == nil {
		return 0
	}
	return len(h.prev)
}

func countersOf(b Brief) events {
	return events{oomKill: b.OOMKills, oom: b.OOMs, high: b.HighEvents, max: b.MaxEvents}
}

// rise is a counter's increase; a counter that went down was reset (the
// cgroup made anew) and rose by its value.
func rise(cur, was int64) int64 {
	if cur < was {
		return max(cur, 0)
	}
	return cur - was
}

// share is usage over the limit, 0 without a limit.
func share(b Brief) float64 {
	if b.Limit <= 0 {
		return 0
	}
	return float64(b.Usage) / float64(b.Limit)
}
