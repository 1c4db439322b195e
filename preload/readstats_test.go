package preload

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/unitsandboxtest"
	"golang.org/x/sys/unix"
)

// nobody is the process' user in these tests.
const nobody = 65534

// readStatsEnv makes the test binary TestReadStatsHelper: {"pid":..,
// "paths":[...]}.
const readStatsEnv = "MEMDOCTOR_TEST_READSTATS"

type readStatsResult struct {
	Err     string  `json:"err,omitempty"` // "" when read
	Seconds float64 `json:"seconds"`
}

type readStatsJob struct {
	PID   int      `json:"pid"`
	Paths []string `json:"paths"`
}

// TestReadStatsHelper, run by TestReadStatsInUnitSandbox in the recorder
// unit's sandbox, reads each path as the stats of the process PID (as
// internal/collect does) and prints one JSON object: path → the error
// ("" when read) and how long ReadStats took.
func TestReadStatsHelper(t *testing.T) {
	v := os.Getenv(readStatsEnv)
	if v == "" {
		t.Skip("run by TestReadStatsInUnitSandbox")
	}
	var job readStatsJob
	if err := json.Unmarshal([]byte(v), &job); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(job.PID) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for l := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(l, ":"); ok {
			lines[k] = strings.TrimSpace(v)
		}
	}
	owners, cred, err := CredOf(lines["Uid"], lines["Gid"], lines["Groups"])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]readStatsResult{}
	for _, p := range job.Paths {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		data, err := ReadStats(ctx, Target{PID: job.PID, StatsPath: p, Owners: owners, Cred: cred}, 1<<20)
		r := readStatsResult{Seconds: time.Since(start).Seconds()}
		cancel()
		switch {
		case err != nil:
			r.Err = err.Error()
		case !strings.Contains(string(data), `"event"`):
			r.Err = fmt.Sprintf("read %.100q, not the stats line", data)
		}
		out[p] = r
	}
	b, _ = json.Marshal(out)
	fmt.Printf("%s\n", b)
}

// setACL gives path an access ACL: the owner, group and other from mode,
// named users and groups (id → permission bits) and mask.
func setACL(path string, mode uint16, users, groups map[uint32]uint16, mask uint16) error {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	add := func(tag, perm uint16, id uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	const undefined = ^uint32(0)
	add(aclUserObj, mode>>6&7, undefined)
	for id, p := range users {
		add(aclUser, p, id)
	}
	add(aclGroupObj, mode>>3&7, undefined)
	for id, p := range groups {
		add(aclGroup, p, id)
	}
	add(aclMask, mask, undefined)
	add(aclOther, mode&7, undefined)
	return unix.Setxattr(path, "system.posix_acl_access", b, 0)
}

// TestReadStatsInUnitSandbox: in the recorder unit's sandbox (no
// setgroups, no setresuid, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH only),
// ReadStats reads a stats file of a process of uid 65534 exactly when that
// user could read it itself, as the kernel answers for a real process of
// that user (cat): its own file, a file of root's that its group, a named
// ACL entry or everyone may read; not one in a directory it may not
// search (by mode, by ACL, or reached through a symlink of its own: one
// to a directory it may search is followed), nor
// a file of root's its user may not read (by mode, by ACL mask). Before,
// every read failed in the sandbox: the worker's setgroups was refused.
func TestReadStatsInUnitSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	u, err := unitsandboxtest.Parse(filepath.Join("..", "packaging", "deb", "memdoctor-record.service"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	type file struct {
		path        string
		uid, gid    int
		mode        os.FileMode
		users, grps map[uint32]uint16
		mask        uint16
	}
	dir := func(name string, uid int, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home := dir("home", nobody, 0o700)
	locked := dir("locked", 0, 0o700)
	open := dir("open", 0, 0o755)
	aclDir := dir("acl-dir", 0, 0o755)
	if err := setACL(aclDir, 0o755, map[uint32]uint16{nobody: 0}, nil, 7); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("no ACLs on %s's file system", base)
		}
		t.Fatal(err)
	}
	if err := os.Symlink(locked, filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(home, "link"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	files := []file{
		{path: filepath.Join(home, "own.jsonl"), uid: nobody, gid: nobody, mode: 0o600},
		{path: filepath.Join(locked, "own.jsonl"), uid: nobody, gid: nobody, mode: 0o644},
		{path: filepath.Join(aclDir, "own.jsonl"), uid: nobody, gid: nobody, mode: 0o644},
		{path: filepath.Join(open, "root-0600.jsonl"), mode: 0o600},
		{path: filepath.Join(open, "root-0644.jsonl"), mode: 0o644},
		{path: filepath.Join(open, "root-group.jsonl"), gid: nobody, mode: 0o640},
		{path: filepath.Join(open, "root-acl-user.jsonl"), mode: 0o600, users: map[uint32]uint16{nobody: 4}, mask: 4},
		{path: filepath.Join(open, "root-acl-group.jsonl"), mode: 0o600, grps: map[uint32]uint16{nobody: 4}, mask: 4},
		{path: filepath.Join(open, "root-acl-masked.jsonl"), mode: 0o600, users: map[uint32]uint16{nobody: 4}, mask: 0},
	}
	var paths []string
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(`{"event":"summary","pid":1}`+"\n"), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f.path, f.uid, f.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f.path, f.mode); err != nil {
			t.Fatal(err)
		}
		if f.users != nil || f.grps != nil {
			if err := setACL(f.path, uint16(f.mode), f.users, f.grps, f.mask); err != nil {
				t.Fatal(err)
			}
		}
		paths = append(paths, f.path)
	}
	// The largest input: 4 GiB (a hole) before the last line; ReadStats
	// reads its last MiB.
	big := filepath.Join(home, "big.jsonl")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 4<<30); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(big, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		t.Fatal(err)
	} else if _, err := f.WriteString("\n" + `{"event":"summary","pid":1}` + "\n"); err != nil || f.Close() != nil {
		t.Fatal(err)
	}
	if err := os.Chown(big, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, big)
	if err := os.Symlink(open, filepath.Join(home, "open-link")); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(home, "link", "own.jsonl"), filepath.Join(home, "open-link", "root-0644.jsonl"))

	// The process, and the kernel's answer for its user.
	asNobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	proc := exec.Command("/bin/sleep", "600")
	proc.SysProcAttr = asNobody
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	kernel := map[string]bool{}
	for _, p := range paths {
		cat := exec.Command("/usr/bin/head", "-c", "1", p)
		cat.SysProcAttr = asNobody
		kernel[p] = cat.Run() == nil
	}

	job, _ := json.Marshal(readStatsJob{PID: proc.Process.Pid, Paths: paths})
	cmd := unitsandboxtest.Command(t, u, unitsandboxtest.Options{
		Argv: []string{os.Args[0], "-test.run=^TestReadStatsHelper$", "-test.count=1"},
		Env:  []string{readStatsEnv + "=" + string(job)},
	})
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the helper in the unit's sandbox: %v\n%s%s", err, out, stderr.String())
	}
	var got map[string]readStatsResult
	i := strings.IndexByte(string(out), '{')
	if i < 0 || json.Unmarshal([]byte(strings.SplitN(string(out[i:]), "\n", 2)[0]), &got) != nil {
		t.Fatalf("the helper said %q", out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.Logf("the helper's peak RSS: %.1f MiB", float64(ru.Maxrss)/1024)
	}
	readable := 0
	for _, p := range paths {
		rel, _ := filepath.Rel(base, p)
		r, ok := got[p]
		read := ok && r.Err == ""
		if read != kernel[p] {
			t.Errorf("%s: read by memdoctor %v (%s), by uid %d itself %v", rel, read, r.Err, nobody, kernel[p])
		} else {
			t.Logf("%s: read %v in %.2f ms %s", rel, read, r.Seconds*1000, r.Err)
		}
		if kernel[p] {
			readable++
		}
	}
	if readable == 0 || readable == len(paths) {
		t.Errorf("%d of %d files readable by uid %d: the cases do not test both answers", readable, len(paths), nobody)
	}
}
