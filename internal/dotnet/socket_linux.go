//go:build linux

package dotnet

import (
	"bytes"
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

// Limits on what is read from the target to find its socket.
const (
	maxEnviron    = 1 << 20
	maxStatus     = 64 << 10
	maxTmpEntries = 1 << 16
)

// Find locates pid's diagnostics socket: dotnet-diagnostic-NSPID-*-socket
// in the directory its TMPDIR names (/tmp without one), inside the
// process' own root (its mount namespace), opened following no symbolic
// link, and owned by the process' user. The returned endpoint holds the
// directory open; Close it.
func Find(pid int) (*Endpoint, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	status, err := safeio.ReadSmall(proc+"/status", maxStatus)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	nspid, uids, err := parseStatus(status)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	tmp := "/tmp"
	if env, err := safeio.ReadSmall(proc+"/environ", maxEnviron); err == nil {
		if t, ok := tmpdir(env); ok {
			tmp = t
		}
	}
	dir, _, err := safeio.OpenDirBeneath(proc+"/root", strings.TrimPrefix(tmp, "/"))
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
	var start uint64
	if b, err := safeio.ReadSmall(proc+"/stat", maxStatus); err == nil {
		start = startTime(b)
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
	addr := fmt.Sprintf("/proc/self/fd/%d/%s", e.dir.Fd(), e.name)
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

// startTime reads a process' start (clock ticks since boot) from its
// stat: the 22nd field, the 20th after the command name's closing
// parenthesis.
func startTime(stat []byte) uint64 {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// parseStatus reads the process' pid in its own namespace (NSpid's last
// field) and its real and effective uids.
func parseStatus(b []byte) (nspid int, uids []uint32, err error) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		s := string(line)
		if v, ok := strings.CutPrefix(s, "NSpid:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				nspid, _ = strconv.Atoi(f[len(f)-1])
			}
		}
		if v, ok := strings.CutPrefix(s, "Uid:"); ok {
			f := strings.Fields(v)
			for _, x := range f[:min(2, len(f))] {
				u, err := strconv.ParseUint(x, 10, 32)
				if err != nil {
					return 0, nil, fmt.Errorf("status Uid %q", v)
				}
				uids = append(uids, uint32(u))
			}
		}
	}
	if nspid <= 0 || len(uids) == 0 {
		return 0, nil, fmt.Errorf("status without NSpid or Uid")
	}
	return nspid, uids, nil
}

// tmpdir reads TMPDIR from an environ block: an absolute path with no ".."
// (the runtime's own rule is the variable as it stands; anything else is
// not followed).
func tmpdir(env []byte) (string, bool) {
	for _, kv := range bytes.Split(env, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte("TMPDIR="))
		if !ok {
			continue
		}
		p := string(v)
		if p == "" || !strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") || strings.ContainsRune(p, 0) {
			return "", false
		}
		p = path.Clean(p)
		if p == "/" {
			return "", false
		}
		return p, true
	}
	return "", false
}
