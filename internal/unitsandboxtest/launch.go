//go:build linux

package unitsandboxtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// specEnv carries the sandbox to the launcher (this package's init in a
// test binary started by Command).
const specEnv = "MEMDOCTOR_TEST_UNIT_SANDBOX"

// spec is the sandbox, resolved to numbers by the test.
type spec struct {
	Argv, Env  []string
	Keep       []int // capabilities kept in the bounding set
	NoNewPrivs bool
	Calls      []int // allowed (AllowList) or denied system calls
	AllowList  bool
	Errno      int
	NativeOnly bool
	Families   []int // socket families allowed; nil: all
	DenyWX     bool
	ReadOnly   bool     // ProtectSystem=strict
	ReadWrite  []string // writable below a read-only root
	ROPaths    []string // read-only although under /proc or /dev
	PrivateTmp bool
	KeepPaths  []string // under /tmp or /var/tmp, still seen with PrivateTmp
}

// Options are what the test puts in place of the unit's host paths.
type Options struct {
	// Replace maps words of ExecStart to the test's (the binary, the
	// state directory, $VARIABLES); a word mapped to "" is dropped.
	Replace map[string][]string
	// StateDirs replace the unit's StateDirectory paths, in order.
	StateDirs []string
	// Env is the command's environment.
	Env []string
	// Argv, when set, runs instead of ExecStart (a test's helper, in the
	// same sandbox).
	Argv []string
	// Keep are paths of the test's under /tmp that stay visible (read
	// only) in the unit's private /tmp.
	Keep []string
}

// Command returns the unit's ExecStart, words replaced, to run in the
// unit's sandbox. It skips the test where the sandbox cannot be built
// (not root, not x86-64, no kernel headers).
func Command(t *testing.T, u *Unit, o Options) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the unit runs as root")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the sandbox's seccomp filter is built for x86-64")
	}
	s := spec{NoNewPrivs: u.NoNewPrivs, NativeOnly: u.NativeOnly, DenyWX: u.DenyWriteExec, Env: o.Env,
		PrivateTmp: u.PrivateTmp}
	words := u.ExecStart
	if o.Argv != nil {
		words = o.Argv
	}
	for _, w := range words {
		if r, ok := o.Replace[w]; ok {
			s.Argv = append(s.Argv, r...)
			continue
		}
		for i, d := range u.StateDirs {
			if i < len(o.StateDirs) && (w == d || strings.HasPrefix(w, d+"/")) {
				w = o.StateDirs[i] + strings.TrimPrefix(w, d)
			}
		}
		s.Argv = append(s.Argv, w)
	}
	if u.Bounding != nil {
		keep, err := capNumbers(u.Bounding)
		if err != nil {
			t.Fatal(err)
		}
		s.Keep = keep
	} else {
		for i := range capNames {
			s.Keep = append(s.Keep, i)
		}
	}
	if len(u.Filter) > 0 {
		nrs, err := syscallNumbers()
		if err != nil {
			t.Skip(err)
		}
		set, allow, err := allowedCalls(u.Filter)
		if err != nil {
			t.Fatal(err)
		}
		s.AllowList = allow
		for name := range set {
			if nr, ok := nrs[name]; ok {
				s.Calls = append(s.Calls, nr)
			}
		}
		slices.Sort(s.Calls)
		s.Errno = int(unix.EPERM)
		if u.ErrorNumber != "" {
			e := 0
			for i := 1; i < 4096 && e == 0; i++ {
				if unix.ErrnoName(syscall.Errno(i)) == u.ErrorNumber {
					e = i
				}
			}
			if e == 0 {
				t.Fatalf("SystemCallErrorNumber=%s is not an errno name", u.ErrorNumber)
			}
			s.Errno = e
		}
	}
	for _, f := range u.AddrFamilies {
		fam := map[string]int{"AF_UNIX": unix.AF_UNIX, "AF_INET": unix.AF_INET, "AF_INET6": unix.AF_INET6, "AF_NETLINK": unix.AF_NETLINK, "AF_PACKET": unix.AF_PACKET}
		v, ok := fam[f]
		if !ok {
			t.Fatalf("RestrictAddressFamilies: %s is not known here", f)
		}
		s.Families = append(s.Families, v)
	}
	if u.ProtectSystem == "strict" {
		s.ReadOnly = true
		s.ReadWrite = append(s.ReadWrite, o.StateDirs...)
		s.ReadWrite = append(s.ReadWrite, u.ReadWrite...)
		if u.ProtectTunable {
			s.ROPaths = append(s.ROPaths, "/proc/sys", "/proc/sysrq-trigger")
		}
	} else if u.ProtectSystem != "" && u.ProtectSystem != "no" {
		t.Fatalf("ProtectSystem=%s is not reproduced here (strict is)", u.ProtectSystem)
	}
	if u.ProtectHome != "" && u.ProtectHome != "read-only" && u.ProtectHome != "no" {
		t.Fatalf("ProtectHome=%s is not reproduced here (read-only is)", u.ProtectHome)
	}
	if s.PrivateTmp {
		s.KeepPaths = append(s.KeepPaths, o.StateDirs...)
		s.KeepPaths = append(s.KeepPaths, o.Keep...)
		if len(s.Argv) > 0 {
			s.KeepPaths = append(s.KeepPaths, filepath.Dir(s.Argv[0]))
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{specEnv + "=" + string(b)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.ReadOnly || s.PrivateTmp {
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS // and / made private
	}
	return cmd
}

func init() {
	v := os.Getenv(specEnv)
	if v == "" {
		return
	}
	runtime.LockOSThread() // the credentials, the filter and exec on one thread
	err := launch(v)
	fmt.Fprintf(os.Stderr, "unitsandboxtest: %v\n", err)
	os.Exit(127)
}

func launch(v string) error {
	var s spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return err
	}
	if len(s.Argv) == 0 {
		return fmt.Errorf("no command")
	}
	if err := mounts(&s); err != nil {
		return err
	}
	last := len(capNames) - 1
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if !slices.Contains(s.Keep, c) {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	// The inheritable set: emptied, as for a unit without
	// AmbientCapabilities (capset keeps the effective and permitted sets).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	if err := installFilter(&s); err != nil {
		return err
	}
	path := s.Argv[0]
	return syscall.Exec(path, s.Argv, s.Env)
}

// mounts reproduces ProtectSystem=strict (with the writable paths),
// ProtectHome=read-only, ProtectKernelTunables, ProtectControlGroups and
// PrivateTmp in the launcher's own mount namespace.
func mounts(s *spec) error {
	if s.PrivateTmp {
		// Paths the test needs that a new /tmp hides: detached copies of
		// their mounts, put back afterwards.
		var kept []int
		for _, p := range s.KeepPaths {
			fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				return fmt.Errorf("open_tree %s: %w", p, err)
			}
			kept = append(kept, fd)
		}
		for _, d := range []string{"/tmp", "/var/tmp"} {
			if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
				return fmt.Errorf("a private %s: %w", d, err)
			}
		}
		for i, p := range s.KeepPaths {
			if err := os.MkdirAll(p, 0o700); err != nil {
				return err
			}
			if err := unix.MoveMount(kept[i], "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return fmt.Errorf("move_mount %s: %w", p, err)
			}
		}
	}
	if !s.ReadOnly {
		return nil
	}
	// Each its own mount, to be made writable or read-only alone (a path
	// the kernel does not have is left out, as systemd leaves it).
	var ro []string
	for _, p := range s.ROPaths {
		if _, err := os.Stat(p); err == nil {
			ro = append(ro, p)
		}
	}
	for _, p := range append(slices.Clone(s.ReadWrite), ro...) {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	setattr := func(p string, set, clr uint64, flags uint) error {
		a := &unix.MountAttr{Attr_set: set, Attr_clr: clr}
		if err := unix.MountSetattr(unix.AT_FDCWD, p, flags, a); err != nil {
			return fmt.Errorf("mount_setattr %s: %w", p, err)
		}
		return nil
	}
	if err := setattr("/", unix.MOUNT_ATTR_RDONLY, 0, unix.AT_RECURSIVE); err != nil {
		return err
	}
	// The API file systems stay writable but /sys (ProtectKernelTunables,
	// ProtectControlGroups) and what ROPaths names; the private /tmp (not
	// the test's paths kept in it) and the writable paths are writable.
	for _, p := range []string{"/proc", "/dev"} {
		if err := setattr(p, 0, unix.MOUNT_ATTR_RDONLY, unix.AT_RECURSIVE); err != nil {
			return err
		}
	}
	if s.PrivateTmp {
		for _, p := range []string{"/tmp", "/var/tmp"} {
			if err := setattr(p, 0, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
				return err
			}
		}
	}
	for _, p := range s.ReadWrite {
		if err := setattr(p, 0, unix.MOUNT_ATTR_RDONLY, unix.AT_RECURSIVE); err != nil {
			return err
		}
	}
	for _, p := range ro {
		if err := setattr(p, unix.MOUNT_ATTR_RDONLY, 0, unix.AT_RECURSIVE); err != nil {
			return err
		}
	}
	return nil
}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg2 = 32
)

// installFilter loads the seccomp program: other architectures and the x32
// ABI refused, socket families and writable executable memory checked,
// then the system calls allowed (or denied) one by one.
func installFilter(s *spec) error {
	if len(s.Calls) == 0 && !s.AllowList && len(s.Families) == 0 && !s.DenyWX {
		return nil
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		and = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	deny := uint32(unix.SECCOMP_RET_ERRNO) | uint32(s.Errno&0xffff)
	notListed, listed := deny, allow
	if !s.AllowList {
		notListed, listed = allow, deny
	}
	var p []unix.SockFilter
	in := func(code uint16, jt, jf uint8, k uint32) {
		p = append(p, unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k})
	}
	in(ld, 0, 0, offArch)
	if s.NativeOnly {
		in(jeq, 1, 0, unix.AUDIT_ARCH_X86_64)
		in(ret, 0, 0, deny)
	}
	in(ld, 0, 0, offNr)
	in(jge, 0, 1, 0x40000000) // x32
	in(ret, 0, 0, deny)
	if s.Families != nil {
		// socket(family, ...): a family not listed gets EAFNOSUPPORT, as
		// with RestrictAddressFamilies; a listed one goes on to socket's
		// own rule below.
		n := len(s.Families)
		in(jeq, 0, uint8(n+3), unix.SYS_SOCKET)
		in(ld, 0, 0, offArg0)
		for i, f := range s.Families {
			in(jeq, uint8(n-i), 0, uint32(f))
		}
		in(ret, 0, 0, uint32(unix.SECCOMP_RET_ERRNO)|uint32(unix.EAFNOSUPPORT))
		in(ld, 0, 0, offNr)
	}
	if s.DenyWX {
		// mmap with PROT_WRITE|PROT_EXEC, mprotect adding PROT_EXEC: EPERM,
		// as with MemoryDenyWriteExecute.
		in(jeq, 0, 5, unix.SYS_MMAP)
		in(ld, 0, 0, offArg2)
		in(and, 0, 0, unix.PROT_WRITE|unix.PROT_EXEC)
		in(jeq, 0, 1, unix.PROT_WRITE|unix.PROT_EXEC)
		in(ret, 0, 0, uint32(unix.SECCOMP_RET_ERRNO)|uint32(unix.EPERM))
		in(ld, 0, 0, offNr)
		for _, nr := range []uint32{unix.SYS_MPROTECT, unix.SYS_PKEY_MPROTECT} {
			in(jeq, 0, 5, nr)
			in(ld, 0, 0, offArg2)
			in(and, 0, 0, unix.PROT_EXEC)
			in(jeq, 0, 1, unix.PROT_EXEC)
			in(ret, 0, 0, uint32(unix.SECCOMP_RET_ERRNO)|uint32(unix.EPERM))
			in(ld, 0, 0, offNr)
		}
	}
	for _, nr := range s.Calls {
		in(jeq, 0, 1, uint32(nr))
		in(ret, 0, 0, listed)
	}
	in(ret, 0, 0, notListed)
	if len(p) > 4096 {
		return fmt.Errorf("the seccomp program has %d instructions, more than 4096", len(p))
	}
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	runtime.KeepAlive(p)
	return nil
}
