package cgroups

import "sort"

// NearShare is how close to its limit a cgroup must be to be read in full
// whatever its size: within 10% of it.
const NearShare = 0.9

// Select picks the cgroups worth reading in full from every cgroup's
// Brief: the top n by usage, then every cgroup within NearShare of its
// limit, with OOM kills or with memory.high breaches (throttled), the
// nearest, most killed and most throttled first, at most
// extra of them. The hierarchy's root ("/") is never picked: it is the host.
func Select(all []Brief, n, extra int) []Brief {
	cand := make([]Brief, 0, len(all))
	for _, b := range all {
		if b.Path != "/" {
			cand = append(cand, b)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool { return cand[i].Usage > cand[j].Usage })
	top := min(n, len(cand))
	out := append([]Brief(nil), cand[:top]...)
	var more []Brief
	for _, b := range cand[top:] {
		if b.OOMKills > 0 || b.HighEvents > 0 || share(b) >= NearShare {
			more = append(more, b)
		}
	}
	sort.SliceStable(more, func(i, j int) bool {
		si, sj := share(more[i]), share(more[j])
		if si != sj {
			return si > sj
		}
		if more[i].OOMKills != more[j].OOMKills {
			return more[i].OOMKills > more[j].OOMKills
		}
		return more[i].HighEvents > more[j].HighEvents
	})
	if len(more) > extra {
		more = more[:extra]
	}
	return append(out, more...)
}

// share is usage over the limit, 0 without a limit.
func share(b Brief) float64 {
	if b.Limit <= 0 {
		return 0
	}
	return float64(b.Usage) / float64(b.Limit)
}
