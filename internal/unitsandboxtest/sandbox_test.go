//go:build linux

package unitsandboxtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// probeEnv makes the test binary TestProbeHelper.
const probeEnv = "MEMDOCTOR_TEST_SANDBOX_PROBE"

// probes are system calls whose answer the recorder unit's sandbox
// decides: each would succeed for root outside it.
var probes = map[string]func(dir string) error{
	"getpid":         func(string) error { _ = unix.Getpid(); return nil },
	"socket AF_INET": func(string) error { return closeFD(unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)) },
	"socket AF_NETLINK": func(string) error {
		return closeFD(unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE))
	},
	"mmap write+exec": func(string) error {
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			_ = unix.Munmap(b)
		}
		return err
	},
	"fchown to its owner": func(dir string) error {
		fd, err := unix.Open(filepath.Join(dir, "probe"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(fd) }()
		return unix.Fchown(fd, 0, 0)
	},
	"setgroups": func(string) error {
		// Raw: the syscall package's Setgroups changes every thread.
		_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0)
		return errnoErr(e)
	},
	"ptrace": func(string) error {
		_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_PEEKUSR, uintptr(os.Getppid()), 0)
		if e == unix.ESRCH || e == unix.EIO { // allowed, and nothing to read
			return nil
		}
		return errnoErr(e)
	},
	"write outside the state directory": func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "written"), nil, 0o600)
	},
}

func closeFD(fd int, err error) error {
	if err == nil {
		_ = unix.Close(fd)
	}
	return err
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// TestProbeHelper, run by TestRecorderUnitSandbox inside the sandbox,
// prints each probe's error ("" for success) as JSON.
func TestProbeHelper(t *testing.T) {
	dir := os.Getenv(probeEnv)
	if dir == "" {
		t.Skip("run by TestRecorderUnitSandbox")
	}
	out := map[string]string{}
	for name, p := range probes {
		if err := p(dir); err != nil {
			out[name] = err.Error()
		} else {
			out[name] = ""
		}
	}
	b, _ := json.Marshal(out)
	fmt.Printf("%s\n", b)
}

// TestRecorderUnitSandbox: the sandbox built from the recorder's unit
// refuses what the unit forbids and nothing a probe needs otherwise; the
// same probes all succeed outside it, so each answer is the sandbox's.
func TestRecorderUnitSandbox(t *testing.T) {
	u, err := Parse(filepath.Join("..", "..", "packaging", "deb", "memdoctor-record.service"))
	if err != nil {
		t.Fatal(err)
	}
	// A directory outside the unit's state directory, and a file of
	// root's in it to fchown.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(sandboxed bool) map[string]string {
		t.Helper()
		var cmd interface {
			Output() ([]byte, error)
		}
		argv := []string{os.Args[0], "-test.run=^TestProbeHelper$", "-test.count=1"}
		if sandboxed {
			cmd = Command(t, u, Options{Argv: argv, Env: []string{probeEnv + "=" + dir}, Keep: []string{dir}})
		} else {
			c := exec.Command(argv[0], argv[1:]...)
			c.Env = []string{probeEnv + "=" + dir}
			cmd = c
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe helper (sandboxed %v): %v\n%s", sandboxed, err, out)
		}
		var got map[string]string
		line, _, _ := strings.Cut(string(out), "\n")
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("probe helper said %q", out)
		}
		return got
	}
	outside := run(false)
	for name, err := range outside {
		if err != "" {
			t.Fatalf("outside the sandbox, %s failed (%s): it cannot tell what the sandbox does", name, err)
		}
		_ = os.Remove(filepath.Join(dir, "written"))
	}
	inside := run(true)
	want := map[string]error{
		"getpid": nil, "socket AF_INET": nil, "ptrace": unix.EPERM,
		"socket AF_NETLINK": unix.EAFNOSUPPORT, "mmap write+exec": unix.EPERM,
		"fchown to its owner": unix.EPERM, "setgroups": unix.EPERM,
		"write outside the state directory": unix.EROFS,
	}
	for name, w := range want {
		got := inside[name]
		if (w == nil) != (got == "") || (w != nil && !strings.Contains(got, w.Error())) {
			t.Errorf("%s in the sandbox: %q, want %v", name, got, w)
		}
	}
	if len(inside) != len(want) {
		t.Errorf("%d probes, %d expected answers", len(inside), len(want))
	}
}
