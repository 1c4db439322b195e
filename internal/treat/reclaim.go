package treat

import (
	"errors"
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgreclaim"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Reclaimed is what `memdoctor reclaim` planned and, with apply, did.
type Reclaimed struct {
	Plan    *cgreclaim.Plan   `json:"plan"`
	Applied bool              `json:"applied"`
	Result  *cgreclaim.Result `json:"result,omitempty"`
}

// Reclaim plans the freeing of the dying memory cgroups below cgroup (a
// path below the cgroup2 mount of the host at root) and, with apply only,
// writes the plan to memory.reclaim and waits up to wait.
func Reclaim(root, cgroup string, apply bool, wait time.Duration) (*Reclaimed, error) {
	plan, err := cgreclaim.MakePlan(procfs.NewFS(root), cgroup)
	if errors.Is(err, cgreclaim.ErrNoV2) {
		return nil, fmt.Errorf("%w: reclaim works on memory cgroups (v2's memory.reclaim, v1's memory.force_empty)", err)
	}
	if err != nil {
		return nil, err
	}
	r := &Reclaimed{Plan: plan}
	if !apply {
		return r, nil
	}
	if r.Result, err = cgreclaim.Apply(root, plan, wait); err != nil {
		return nil, err
	}
	r.Applied = true
	return r, nil
}
