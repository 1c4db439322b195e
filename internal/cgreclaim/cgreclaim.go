// Package cgreclaim frees dying memory cgroups on cgroup v2 by reclaiming
// the pages that still hold them, through their parent's memory.reclaim
// (kernel 5.19+).
//
// A removed memory cgroup stays allocated while pages charged to it live.
// Reclaim started at a cgroup walks its whole subtree, the dying cgroups
// below it included, so writing to the parent's memory.reclaim drops the
// page cache that pins them and lets the kernel free them. What to ask for
// is read from the tree: the parent's page cache (memory.stat file) less
// that of its live children is the cache of the parent itself and of its
// dying descendants. Only clean page cache is asked for: memory.reclaim
// keeps going while it makes any progress, and a request that counts
// dirty pages or kernel memory it cannot drop can keep it busy for minutes
// (dirty pages pin their cgroup until written back: they are reported).
// The request is written in chunks and stops once no dying cgroup is left
// or the time is up. Then, if dying cgroups remain, one more request of the
// reclaimable slab lets the kernel's shrinkers drop the inodes that still
// point at the dying cgroups' writeback state (seen on 6.1: the cache was
// gone but every cgroup stayed until that second pass); that request
// usually ends in EAGAIN, which is expected.
//
// A target is a cgroup with dying descendants that none of its live
// children accounts for (cgroup.stat nr_dying_descendants of the cgroup
// less those of its live children). The root is never a target: it has no
// memory.current to bound the request; dying cgroups right below it are
// reported, and freeing them is a host-wide cache drop.
package cgreclaim

import (
	"errors"
	"path"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Target is a cgroup whose memory.reclaim frees dying cgroups below it.
type Target struct {
	Path  string `json:"path"`  // below the cgroup2 mount, "/jobs"
	Dying int64  `json:"dying"` // dying cgroups below it that no live child accounts for
	Bytes int64  `json:"bytes"` // clean page cache less the live children's: what it asks memory.reclaim for
	Dirty int64  `json:"dirty"` // dirty and writeback page cache less the live children's: not asked for
	Slab  int64  `json:"slab"`  // reclaimable slab less the live children's: the second pass
}

// Plan is what reclaim would do on one host.
type Plan struct {
	Mount      string   `json:"mount"`        // the cgroup2 mount point, FS-relative ("sys/fs/cgroup")
	Dying      int64    `json:"dying"`        // the root's nr_dying_descendants
	RootDying  int64    `json:"root_dying"`   // dying cgroups right below the root (not targets)
	HasReclaim bool     `json:"has_reclaim"`  // memory.reclaim exists (5.19+), or memory.force_empty on v1
	V1         bool     `json:"v1,omitempty"` // cgroup v1: each target's memory.force_empty is written (Dying of a target is then unknown, -1)
	Targets    []Target `json:"targets"`
}

// ErrNoV2 is returned where neither a cgroup2 hierarchy with the memory
// controller nor a v1 memory hierarchy is mounted.
var ErrNoV2 = errors.New("no memory cgroup hierarchy (v2 with the memory controller, or v1) is mounted")

// MakePlan reads the cgroup2 tree of f. Below dir (a path below the mount,
// "/" for all) only that subtree is considered. Where the memory controller
// is on a v1 hierarchy, the plan is memory.force_empty on dir (see v1.go).
func MakePlan(f procfs.FS, dir string) (*Plan, error) {
	m, _, err := cgroups.FindMounts(f)
	if err != nil {
		return nil, err
	}
	mount := m.V2
	if !m.V2Memory {
		if m.V1Memory != "" {
			return makePlanV1(f, m.V1Memory, dir)
		}
		return nil, ErrNoV2
	}
	p := &Plan{Mount: mount}
	st, err := cgroups.ReadCgroupStat(f, mount)
	if err != nil {
		return nil, err
	}
	p.Dying, _ = st.Dying()
	start := path.Clean("/" + dir)
	w := walker{f: f, mount: mount, plan: p}
	if _, err := w.walk(start, 0); err != nil {
		return nil, err
	}
	sort.Slice(p.Targets, func(i, j int) bool {
		if p.Targets[i].Dying != p.Targets[j].Dying {
			return p.Targets[i].Dying > p.Targets[j].Dying
		}
		return p.Targets[i].Path < p.Targets[j].Path
	})
	return p, nil
}

type walker struct {
	f     procfs.FS
	mount string
	plan  *Plan
}

const maxDepth = 32

// walk returns the cgroup's nr_dying_descendants and adds the targets of
// its subtree.
func (w walker) walk(rel string, depth int) (int64, error) {
	dir := w.mount + rel
	if rel == "/" {
		dir = w.mount
	}
	st, err := cgroups.ReadCgroupStat(w.f, dir)
	if err != nil {
		if procfs.IsNotExist(err) && rel != "/" {
			return 0, nil // removed while walking
		}
		return 0, err
	}
	dying, _ := st.Dying()
	if rel == "/" || depth == 0 {
		w.plan.HasReclaim = w.plan.HasReclaim || w.f.Exists(dir+"/memory.reclaim") || w.hasReclaimBelow(dir)
	}
	if dying == 0 || depth >= maxDepth {
		return dying, nil
	}
	ents, err := w.f.ReadDir(dir)
	if err != nil {
		return dying, err
	}
	var childDying int64
	var childMem memStat
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		child := path.Join(rel, e.Name())
		d, err := w.walk(child, depth+1)
		if err != nil {
			return dying, err
		}
		childDying += d
		childMem.add(readMemStat(w.f, w.mount+child))
	}
	own := dying - childDying
	if own <= 0 {
		return dying, nil
	}
	if rel == "/" {
		w.plan.RootDying = own
		return dying, nil
	}
	if !w.f.Exists(dir + "/memory.stat") {
		return dying, nil // memory controller not enabled here: nothing to ask
	}
	m := readMemStat(w.f, dir)
	w.plan.Targets = append(w.plan.Targets, Target{Path: rel, Dying: own,
		Bytes: max(m.clean-childMem.clean, 0), Dirty: max(m.dirty-childMem.dirty, 0), Slab: max(m.slab-childMem.slab, 0)})
	return dying, nil
}

// memStat is what reclaim reads of a cgroup's memory.stat (0 when unknown).
type memStat struct{ clean, dirty, slab int64 }

func (m *memStat) add(o memStat) { m.clean += o.clean; m.dirty += o.dirty; m.slab += o.slab }

func readMemStat(f procfs.FS, dir string) memStat {
	st, err := cgroups.ReadMemoryStat(f, dir)
	if err != nil {
		return memStat{}
	}
	file := st.Value("file")
	dirty := st.Value("file_dirty") + st.Value("file_writeback")
	return memStat{clean: max(file-dirty, 0), dirty: dirty, slab: st.Value("slab_reclaimable")}
}

// hasReclaimBelow looks for memory.reclaim in the first child directory
// (the root has it on 5.19+ too, but a capture may lack it).
func (w walker) hasReclaimBelow(dir string) bool {
	ents, err := w.f.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.IsDir() && w.f.Exists(dir+"/"+e.Name()+"/memory.reclaim") {
			return true
		}
	}
	return false
}

// Outcome is what applying one target did.
type Outcome struct {
	Target
	Partial bool   `json:"partial"` // the kernel reclaimed less than asked (EAGAIN), or was stopped at the time limit (EINTR)
	Error   string `json:"error,omitempty"`
}

// Result is what Apply did on the host.
type Result struct {
	Before   int64         `json:"dying_before"`
	After    int64         `json:"dying_after"`
	Waited   time.Duration `json:"waited_ns"`
	Outcomes []Outcome     `json:"outcomes"`
}

// chunk is how much one write to memory.reclaim asks for; slab the least
// the second pass asks for.
const (
	chunk = 4 << 20
	slab  = 64 << 10
)

// Apply writes each target's Bytes to its memory.reclaim under root (the
// host's "/", where the plan's mount is), chunk by chunk, until no dying
// cgroup is left or wait has passed (a write still running then is
// stopped); then, the kernel freeing cgroups
// asynchronously, it reads the root's nr_dying_descendants until it is 0 or
// wait has passed.
func Apply(root string, p *Plan, wait time.Duration) (*Result, error) {
	if p.V1 {
		return applyV1(root, p, wait)
	}
	if !p.HasReclaim {
		return nil, errors.New("memory.reclaim is missing (kernel before 5.19): nothing to write")
	}
	r := &Result{Before: p.Dying}
	f := procfs.NewFS(root)
	start := time.Now()
	for _, t := range p.Targets {
		o := Outcome{Target: t}
		dir := filepath.Join(root, filepath.FromSlash(p.Mount), filepath.FromSlash(t.Path))
		for left := t.Bytes; left > 0 && time.Since(start) < wait; left -= chunk {
			err := cgroups.Reclaim(dir, min(left, chunk), wait-time.Since(start))
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				o.Partial = true
				break
			}
			if err != nil {
				o.Error = err.Error()
				break
			}
			if n, err := readDying(f, p.Mount); err == nil && n == 0 {
				break
			}
		}
		if n, err := readDying(f, p.Mount); err == nil && n > 0 && o.Error == "" && time.Since(start) < wait {
			// The second pass: the shrinkers (see the package doc).
			err := cgroups.Reclaim(dir, max(t.Slab, slab), wait-time.Since(start))
			if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR) {
				o.Error = err.Error()
			}
		}
		r.Outcomes = append(r.Outcomes, o)
	}
	n, err := settle(start, wait, func() (int64, error) { return readDying(f, p.Mount) })
	if n >= 0 {
		r.After = n
	}
	r.Waited = time.Since(start)
	return r, err
}

// settle reads the dying count until none is left, it has not moved for a
// second, or wait has passed since start (the kernel frees released
// cgroups asynchronously), and returns the last count read (-1 when no
// read succeeded).
func settle(start time.Time, wait time.Duration, read func() (int64, error)) (int64, error) {
	last, still := int64(-1), time.Now()
	for {
		n, err := read()
		if err != nil {
			return last, err
		}
		if n != last {
			last, still = n, time.Now()
		}
		if n == 0 || time.Since(start) >= wait || time.Since(still) >= time.Second {
			return n, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readDying(f procfs.FS, mount string) (int64, error) {
	st, err := cgroups.ReadCgroupStat(f, mount)
	if err != nil {
		return 0, err
	}
	v, _ := st.Dying()
	return v, nil
}
