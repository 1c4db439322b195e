//go:build linux

package dotnet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// Endpoint is a process' diagnostics socket, found by Find.
type Endpoint struct {
	// PID is the process (this namespace's pid); Path the socket as the
	// process sees it (its TMPDIR and name).
	PID  int
	Path string
	dir  *os.File
	name string
}

// maxTmpEntries limits the listing of the target's TMPDIR.
const maxTmpEntries = 1 << 16

// Find locates pid's diagnostics socket: dotnet-diagnostic-NSPID-*-socket
// in the directory its TMPDIR names (/tmp without one), inside the
// process' own root (its mount namespace), opened following no symbolic
// link, and owned by the process' user. The returned endpoint holds the
// directory open; Close it.
func Find(pid int) (*Endpoint, error) {
	fs := procfs.Live()
	status, err := fs.ProcStatus(pid)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	nspid, uids, err := statusIDs(status)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	tmp := "/tmp"
	if env, err := fs.ProcEnviron(pid, "TMPDIR"); err == nil {
		if t, ok := tmpdir(env); ok {
			tmp = t
		}
	}
	dir, _, err := safeio.OpenDirBeneath(procfs.PIDPath(pid, "root"), strings.TrimPrefix(tmp, "/"))
	if err != nil {
		return nil, fmt.Errorf("pid %d: its TMPDIR %s: %w (memdoctor follows no symbolic link there)", pid, tmp, err)
	}
	entries, err := listDir(dir)
	if err != nil {
		_ = dir.Close()
		return nil, fmt.Errorf("pid %d: listing its TMPDIR %s: %w", pid, tmp, err)
	}
	prefix := "dotnet-diagnostic-" + strconv.Itoa(nspid) + "-"
	var found []string
	var refused []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, prefix) || !strings.HasSuffix(e.Name, "-socket") || len(e.Name) > 80 {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), e.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			refused = append(refused, e.Name+" is not a socket")
			continue
		}
		if !slices.Contains(uids, st.Uid) {
			refused = append(refused, fmt.Sprintf("%s is owned by uid %d, not the process' user", e.Name, st.Uid))
			continue
		}
		found = append(found, e.Name)
	}
	if len(found) == 0 {
		_ = dir.Close()
		why := ""
		if len(refused) > 0 {
			why = " (" + strings.Join(refused, "; ") + ")"
		}
		return nil, fmt.Errorf("pid %d: no diagnostics socket %s*-socket in its TMPDIR %s%s: a .NET Core 3.0+ runtime opens one unless DOTNET_EnableDiagnostics=0",
			pid, prefix, tmp, why)
	}
	var start uint64 // clock ticks since boot
	if st, err := fs.ProcStat(pid); err == nil {
		start = st.StartTimeTicks
	}
	name := choose(found, prefix, start)
	return &Endpoint{PID: pid, Path: path.Join(tmp, name), dir: dir, name: name}, nil
}

func listDir(dir *os.File) ([]safeio.DirEntry, error) {
	if _, err := dir.Seek(0, 0); err != nil {
		return nil, err
	}
	names, err := dir.Readdirnames(maxTmpEntries + 1)
	if len(names) > maxTmpEntries {
		return nil, fmt.Errorf("more than %d entries", maxTmpEntries)
	}
	if err != nil && len(names) == 0 {
		return nil, err
	}
	out := make([]safeio.DirEntry, len(names))
	for i, n := range names {
		out[i] = safeio.DirEntry{Name: n}
	}
	return out, nil
}

// Close releases the directory.
func (e *Endpoint) Close() error {
	if e == nil || e.dir == nil {
		return nil
	}
	return e.dir.Close()
}

// Dial connects to the socket, through the directory held open, and
// checks that the process listening is the target itself (its
// credentials, as the kernel gives them): a socket another process
// planted or took over is refused.
func (e *Endpoint) Dial(ctx context.Context) (net.Conn, error) {
	addr := procfs.SelfFDPath(int(e.dir.Fd())) + "/" + e.name
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s of pid %d: %w", e.Path, e.PID, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("connecting to %s: not a Unix socket", e.Path)
	}
	cred, err := peerCred(uc)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("%s: reading its peer: %w", e.Path, err)
	}
	if int(cred.Pid) != e.PID {
		_ = c.Close()
		return nil, fmt.Errorf("%s is served by pid %d, not by pid %d: left alone", e.Path, cred.Pid, e.PID)
	}
	return c, nil
}

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// choose picks among the sockets of one pid (a pid reused, or a stale
// socket of a process killed before it could remove it) the one whose
// disambiguation key is the process' start time, which is what the
// runtime puts there, else the one with the largest key (the newest).
func choose(found []string, prefix string, start uint64) string {
	best, bestKey := found[0], uint64(0)
	for _, n := range found {
		k, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(n, prefix), "-socket"), 10, 64)
		if err != nil {
			continue
		}
		if start > 0 && k == start {
			return n
		}
		if k >= bestKey {
			best, bestKey = n, k
		}
	}
	return best
}

// statusIDs reads the process' pid in its own namespace (NSpid's last
// field, procfs.OwnPID) and its real and effective uids from its status.
func statusIDs(st procfs.KV) (nspid int, uids []uint32, err error) {
	nspid = procfs.OwnPID(st, 0)
	if v, ok := st.Text["Uid"]; ok {
		f := strings.Fields(v)
		for _, x := range f[:min(2, len(f))] {
			u, err := strconv.ParseUint(x, 10, 32)
			if err != nil {
				return 0, nil, fmt.Errorf("status Uid %q", v)
			}
			uids = append(uids, uint32(u))
		}
	}
	if nspid <= 0 || len(uids) == 0 {
		return 0, nil, fmt.Errorf("status without NSpid or Uid")
	}
	return nspid, uids, nil
}

// tmpdir reads TMPDIR from the process' environment: an absolute path
// with no ".." (the runtime's own rule is the variable as it stands;
// anything else is not followed).
func tmpdir(env procfs.Environ) (string, bool) {
	p, ok := env.Lookup("TMPDIR")
	if !ok {
		return "", false
	}
	if p == "" || !strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") || strings.ContainsRune(p, 0) {
		return "", false
	}
	p = path.Clean(p)
	if p == "/" {
		return "", false
	}
	return p, true
}
