package malloc

// Asking memdoctor's preload library, without pausing the process (the
// protocol of preload/README.md, "Requests"; preload/request.go is the
// same requester for memdoctor's own commands):
//
//	the process runs with LD_PRELOAD=.../libmemdoctor_preload.so and
//	MEMDOCTOR_STATS=PATH (%p in PATH is its pid, %% a percent sign);
//	a requester writes "ACTION ID\n" (ACTION info or trim) to a temporary
//	file and renames it to PATH.request, so no half request is ever read;
//	the library's thread looks for it every second, writes malloc_info(0)
//	to PATH.malloc_info.xml (a temporary file renamed into place), for
//	"trim" then calls malloc_trim(0), appends a JSON line with
//	"request":"ID" to PATH ("info", "trim" or "error"), and removes
//	PATH.request.
//
// PATH is the process' view: memdoctor reaches it through /proc/PID/root
// (the process' mount namespace and root) or, when relative, /proc/PID/cwd.
// The temporary request file is created with O_EXCL|O_NOFOLLOW (never
// through a planted symlink) and given to the process' user, so that the
// library may remove it from a sticky directory such as /tmp.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// maxPreloadXML bounds the dump memdoctor reads.
const maxPreloadXML = 256 << 20

// hostPath maps a path as the process sees it to memdoctor's view.
func (t *target) hostPath(p string) string {
	if filepath.IsAbs(p) {
		return procPath(t.pid, "root") + p
	}
	return filepath.Join(procPath(t.pid, "cwd"), p)
}

// preloadEvent is the part of a stats line memdoctor reads.
type preloadEvent struct {
	Event     string  `json:"event"`
	Request   string  `json:"request"`
	ElapsedMs float64 `json:"elapsedMs"`
	XML       string  `json:"xml"`
	Error     string  `json:"error"`
	RSS       json.RawMessage
}

// askPreload sends a request and waits for its answer line.
func askPreload(ctx context.Context, t *target, opt Options, action string) (*preloadEvent, error) {
	stats := t.hostPath(t.statsPath)
	req := stats + ".request"
	if _, err := os.Lstat(req); err == nil {
		return nil, fmt.Errorf("%w: %s exists: another request is pending (or the library stopped taking requests); retry, or use --method ptrace", ErrPreload, req)
	}
	id := fmt.Sprintf("md%d-%d", os.Getpid(), time.Now().UnixNano())
	tmp := req + ".tmp-" + id
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: creating %s: %w (can this user write next to %s=%s?)", ErrPreload, tmp, err, statsVar, t.statsPath)
	}
	_, werr := f.WriteString(action + " " + id + "\n")
	if os.Geteuid() == 0 {
		if uid, gid, ok := t.owner(); ok {
			_ = f.Chown(uid, gid) // matters only in sticky directories
		}
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, req)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("%w: writing %s: %w", ErrPreload, req, werr)
	}
	deadline := time.Now().Add(opt.PreloadWait)
	for {
		if _, err := os.Lstat(req); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if b, err := os.ReadFile(req); err == nil && bytes.Contains(b, []byte(id)) {
				_ = os.Remove(req)
			}
			return nil, fmt.Errorf("%w within %s (the library looks for requests every second, and stops after an error it prints on the process' stderr as \"memdoctor-preload: ...\"); use --method ptrace to call into the process instead (one thread held briefly)",
				ErrPreload, opt.PreloadWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ev, err := findAnswer(stats, id)
	if err != nil {
		return nil, err
	}
	if ev.Event == "error" {
		return nil, fmt.Errorf("%w: the library answered request %s with an error: %s", ErrPreload, id, ev.Error)
	}
	return ev, nil
}

// findAnswer finds the stats line of request id in the last MiB of the
// stats file (it was just written).
func findAnswer(stats, id string) (*preloadEvent, error) {
	f, err := os.OpenFile(stats, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreload, err)
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const tail = 1 << 20
	off := max(st.Size()-tail, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrPreload, stats, err)
	}
	needle := []byte(`"request":"` + id + `"`)
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if !bytes.Contains(lines[i], needle) {
			continue
		}
		var ev preloadEvent
		if err := json.Unmarshal(lines[i], &ev); err != nil {
			return nil, fmt.Errorf("%w: %s: the answer to %s: %w", ErrPreload, stats, id, err)
		}
		return &ev, nil
	}
	return nil, fmt.Errorf("%w: %s has no line answering request %s", ErrPreload, stats, id)
}

// readPreload asks the library for malloc_info and parses it.
func readPreload(ctx context.Context, t *target, opt Options) (*Info, []byte, error) {
	ev, err := askPreload(ctx, t, opt, "info")
	if err != nil {
		return nil, nil, err
	}
	xml := ev.XML
	if xml == "" {
		xml = t.statsPath + ".malloc_info.xml"
	}
	return readDump(t.hostPath(xml))
}

func readDump(name string) (*Info, []byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPreload, err)
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, maxPreloadXML+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: reading %s: %w", ErrPreload, name, err)
	}
	if len(data) > maxPreloadXML {
		return nil, nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrPreload, name, maxPreloadXML)
	}
	info, err := ParseInfo(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return info, data, nil
}

// owner returns the process' real uid and gid.
func (t *target) owner() (uid, gid int, ok bool) {
	if t.gid < 0 {
		return 0, 0, false
	}
	return int(t.uid[0]), t.gid, true
}

// parseGid reads the real gid from a status "Gid:" value.
func parseGid(s string) int {
	f := []byte(s)
	if i := bytes.IndexAny(f, " \t"); i >= 0 {
		f = f[:i]
	}
	g, err := strconv.Atoi(string(f))
	if err != nil {
		return -1
	}
	return g
}
