package malloc

// Asking memdoctor's preload library, without pausing the process (the
// protocol of preload/README.md, "Requests"): preload.Ask is the one
// implementation, shared with preload.Request. Here it is given what /proc
// says about the process:
//
//   - MEMDOCTOR_STATS as the process sees it, resolved in its root
//     (/proc/PID/root) or, when relative, its working directory;
//   - its fs uid, fs gid and supplementary groups: as root, memdoctor does
//     the file work as that user (nothing is created or read that the
//     process could not create or read itself), and reads only files of
//     that user (or root: the stats file of a service opened before it
//     dropped privileges);
//   - the pid it sees as its own, which the answer must carry.
//
// The whole exchange is bounded by --timeout (and the library's wait,
// PreloadWait), and ends on SIGTERM or Ctrl-C: every file step runs on a
// thread of its own and is waited for under the context.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/preload"
)

// preloadTarget describes t for preload.Ask.
func (t *target) preloadTarget() (preload.Target, error) {
	pt := preload.Target{PID: t.pid, OwnPID: t.ownPID, StatsPath: t.statsPath}
	for _, u := range t.uid {
		pt.Owners = append(pt.Owners, uint32(u))
	}
	if os.Geteuid() != 0 {
		return pt, nil // only processes of memdoctor's own user get here
	}
	if t.gid[3] < 0 || t.groups == nil {
		return pt, fmt.Errorf("%w: /proc/%d/status has no Gid or Groups line: memdoctor does not know which user to act as", ErrPreload, t.pid)
	}
	pt.Cred = &preload.Cred{UID: uint32(t.uid[3]), GID: uint32(t.gid[3]), Groups: t.groups}
	return pt, nil
}

// askPreload sends a request and waits for its answer, within
// min(--timeout, PreloadWait).
func askPreload(ctx context.Context, t *target, opt Options, action string, withXML bool) (*preload.Response, error) {
	pt, err := t.preloadTarget()
	if err != nil {
		return nil, err
	}
	pt.SkipXML = !withXML
	wait := min(opt.Timeout, opt.PreloadWait)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	res, err := preload.Ask(ctx, pt, action)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, context.Canceled):
		return nil, fmt.Errorf("%w: interrupted before the answer: %w", ErrPreload, err)
	case errors.Is(err, preload.ErrNoAnswer):
		return nil, fmt.Errorf("%w within %s: %w; use --method ptrace to call into the process instead (one thread held briefly)", ErrPreload, wait, err)
	case errors.Is(err, preload.ErrPending):
		return nil, fmt.Errorf("%w: %w; retry, or use --method ptrace", ErrPreload, err)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w within %s: %w", ErrPreload, wait, err)
	}
	return nil, fmt.Errorf("%w: %w", ErrPreload, err)
}

// readPreload asks the library for malloc_info and parses it.
func readPreload(ctx context.Context, t *target, opt Options) (*Info, []byte, error) {
	res, err := askPreload(ctx, t, opt, "info", true)
	if err != nil {
		return nil, nil, err
	}
	info, err := ParseInfo(strings.NewReader(string(res.XML)))
	if err != nil {
		return nil, nil, fmt.Errorf("%s.malloc_info.xml: %w", t.statsPath, err)
	}
	return info, res.XML, nil
}

// parseGids reads the four gids of a status "Gid:" value (-1 each when
// unreadable) and the "Groups:" value (nil when unreadable).
func parseGids(gid, groups string) (g [4]int64, gs []uint32) {
	g = [4]int64{-1, -1, -1, -1}
	if f := strings.Fields(gid); len(f) == 4 {
		for i, s := range f {
			v, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return [4]int64{-1, -1, -1, -1}, nil
			}
			g[i] = int64(v)
		}
	}
	gs = []uint32{}
	for _, s := range strings.Fields(groups) {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return g, nil
		}
		gs = append(gs, uint32(v))
	}
	return g, gs
}
