package cgroups

import (
	"sort"
	"strings"
)

// Match finds the cgroup a user means among paths (relative to the
// hierarchy's root): a path ("/system.slice/x.service") matches itself; a
// name matches the cgroups whose Identity has it as its display name,
// unit, pod UID ("pod <uid>" too) or container id (or a prefix of 12 hex
// digits or more), and, with names from the runtimes' state (MatchNamed),
// its pod's or container's name (alone or as namespace/pod[/container]). found holds every match (more than one is ambiguous);
// when there is none, near holds up to maxNear paths whose path or name
// come close (contain the query, or are a few edits from it), the closest
// first.
func Match(paths []string, query string) (found, near []string) {
	return MatchNamed(paths, query, Name)
}

// MatchNamed is Match naming each cgroup by name (Runtime.Name, say).
func MatchNamed(paths []string, query string, name func(string) Identity) (found, near []string) {
	q := strings.TrimSpace(query)
	if strings.HasPrefix(q, "/") {
		q = strings.TrimSuffix(q, "/")
		if q == "" {
			q = "/"
		}
		for _, p := range paths {
			if p == q {
				return []string{p}, nil
			}
		}
	} else {
		for _, p := range paths {
			if nameMatches(p, name(p), q, name) {
				found = append(found, p)
			}
		}
		if len(found) > 0 {
			return found, nil
		}
	}
	type cand struct {
		path string
		d    int
	}
	var cs []cand
	lq := strings.ToLower(strings.Trim(q, "/"))
	for _, p := range paths {
		id := name(p)
		best := -1
		for _, s := range []string{strings.Trim(p, "/"), id.Name, id.Unit, id.Pod, id.Container, p[strings.LastIndex(p, "/")+1:]} {
			s = strings.ToLower(s)
			if s == "" {
				continue
			}
			d := -1
			switch {
			case lq != "" && strings.Contains(s, lq):
				d = len(s) - len(lq) // the shorter the closer
				d = min(d, 2)
			default:
				if e := editDistance(s, lq); e <= maxNearEdits {
					d = e + 1
				}
			}
			if d >= 0 && (best < 0 || d < best) {
				best = d
			}
		}
		if best >= 0 {
			cs = append(cs, cand{p, best})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	for i, c := range cs {
		if i == maxNear {
			break
		}
		near = append(near, c.path)
	}
	return nil, near
}

// maxNear bounds the close matches listed; maxNearEdits is how many
// edits (insert, delete, replace a character) a close name may be away.
const (
	maxNear      = 5
	maxNearEdits = 3
)

// nameMatches says whether q names the cgroup at p itself (not one below
// it that inherits its unit or pod).
func nameMatches(p string, id Identity, q string, name func(string) Identity) bool {
	last := p[strings.LastIndex(p, "/")+1:]
	switch {
	case q == "":
		return false
	case q == last:
		return true
	case id.Pod != "" && id.ContainerID == "" && id.PodUID != "" && strings.Contains(last, "pod") &&
		(q == id.Pod || q == id.Namespace+"/"+id.Pod):
		return true
	case id.Container != "" && strings.Contains(last, id.ContainerID) &&
		(q == id.Container || (id.Pod != "" && q == id.Namespace+"/"+id.Pod+"/"+id.Container)):
		return true
	case q == id.Name:
		// the cgroup that takes the name, not one below it that inherits it
		parent := p[:strings.LastIndex(p, "/")]
		return name(parent).Name != q
	case id.PodUID != "" && id.ContainerID == "" && strings.Contains(last, "pod") &&
		(q == id.PodUID || q == "pod "+id.PodUID || q == "pod"+id.PodUID):
		return true
	case id.ContainerID != "" && strings.Contains(last, id.ContainerID) && len(q) >= 12 && strings.HasPrefix(id.ContainerID, q):
		return true
	}
	return false
}

// editDistance is the Levenshtein distance of two strings (bytes), bounded
// in cost by giving up past maxNearEdits.
func editDistance(a, b string) int {
	if d := len(a) - len(b); d > maxNearEdits || -d > maxNearEdits {
		return maxNearEdits + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
