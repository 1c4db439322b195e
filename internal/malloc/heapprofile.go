package malloc

// The heap profile the preload library writes with MEMDOCTOR_PROFILE
// (preload/README.md "Heap profile"): found from the process' environment
// and read like the stats file, as the process' user, through its root or
// working directory.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/memdoctor/memdoctor/internal/inject"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// maxProfile bounds the dump read (4096 stacks and the maps).
const maxProfile = 64 << 20

const (
	profileVar     = preload.ProfileVar
	profilePathVar = preload.ProfilePathVar
)

// ErrNoProfile says the process writes no heap profile (yet).
var ErrNoProfile = errors.New("no heap profile")

// HeapProfile is a dump of the library read from a live process.
type HeapProfile struct {
	Path string // MEMDOCTOR_PROFILE_PATH as the process sees it, expanded
	Data []byte
	// Maps are the process' mappings now (the dump has its own too).
	Maps []procfs.Mapping
	pid  int
}

// Open opens the file behind one of the process' mappings, checked to be
// the file it mapped (for symbolizing).
func (h *HeapProfile) Open(m procfs.Mapping) (*os.File, error) {
	return inject.OpenMapped(h.pid, m)
}

// ReadHeapProfile reads the latest heap profile of process pid.
func ReadHeapProfile(ctx context.Context, pid int) (*HeapProfile, error) {
	t, err := inspectTarget(pid)
	if err != nil {
		return nil, err
	}
	if !t.preloadLib {
		return nil, fmt.Errorf("%w: pid %d (%s) does not map %s: start it with LD_PRELOAD=$(memdoctor preload --print-path) %s=512KiB", ErrNoProfile, pid, t.comm, preload.LibName, profileVar)
	}
	env := readEnv(pid, profileVar, profilePathVar)
	if !preload.ProfileOn(env[profileVar]) {
		return nil, fmt.Errorf("%w: pid %d (%s) runs %s but was started without %s=RATE (such as 512KiB)", ErrNoProfile, pid, t.comm, preload.LibName, profileVar)
	}
	pattern := env[profilePathVar]
	if pattern == "" {
		pattern = preload.DefaultProfilePath
	}
	p, ok := preload.ExpandStatsPath(pattern, t.ownPID)
	if !ok {
		return nil, fmt.Errorf("%w: %s=%q is not a path the library writes", ErrNoProfile, profilePathVar, pattern)
	}
	pt, err := t.preloadTarget()
	if err != nil {
		return nil, err
	}
	pt.StatsPath = p
	data, err := preload.ReadStats(ctx, pt, maxProfile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: pid %d has not written %s yet (it does every MEMDOCTOR_PROFILE_INTERVAL, 10s unless set): %w", ErrNoProfile, pid, p, err)
		}
		return nil, fmt.Errorf("reading pid %d's heap profile %s: %w", pid, p, err)
	}
	return &HeapProfile{Path: p, Data: data, Maps: t.maps, pid: pid}, nil
}
