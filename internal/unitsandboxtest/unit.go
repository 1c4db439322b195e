//go:build linux

// Package unitsandboxtest runs a command under the sandbox a systemd unit file
// describes, without systemd: the tests of the packaged recorder unit use it
// where PID 1 is not systemd (a container) to run memdoctor as the unit
// would. Only tests import it.
//
// From the unit it takes ExecStart, CapabilityBoundingSet,
// NoNewPrivileges, SystemCallFilter (allow and deny lines, groups
// expanded as systemd defines them), SystemCallErrorNumber,
// SystemCallArchitectures=native, RestrictAddressFamilies,
// MemoryDenyWriteExecute, ProtectSystem=strict with StateDirectory and
// ReadWritePaths, ProtectHome, ProtectKernelTunables,
// ProtectControlGroups and PrivateTmp. The rest (RestrictNamespaces,
// LockPersonality, resource limits, ...) is not reproduced.
//
// A test binary that imports the package becomes the sandbox's launcher
// when started by Command: before any test runs it drops the capabilities
// outside the bounding set, sets up the mount namespace, installs the
// seccomp filter and executes the command.
package unitsandboxtest

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Unit is what a unit file says of the sandbox.
type Unit struct {
	ExecStart      []string
	Bounding       []string // CAP_* names kept; nil: no CapabilityBoundingSet
	NoNewPrivs     bool
	Filter         []string // the SystemCallFilter lines, in order
	ErrorNumber    string   // SystemCallErrorNumber (EPERM)
	NativeOnly     bool
	AddrFamilies   []string // RestrictAddressFamilies
	DenyWriteExec  bool     // MemoryDenyWriteExecute
	ProtectSystem  string
	ProtectHome    string
	ProtectTunable bool
	ProtectCgroups bool
	PrivateTmp     bool
	StateDirs      []string // StateDirectory, under /var/lib
	ReadWrite      []string // ReadWritePaths
}

// Parse reads the [Service] section of a unit file.
func Parse(path string) (*Unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	u := &Unit{}
	yes := func(v string) bool { return slices.Contains([]string{"yes", "true", "on", "1"}, v) }
	sc := bufio.NewScanner(f)
	section := ""
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section != "[Service]" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q is not KEY=VALUE", path, n, line)
		}
		switch v = strings.TrimSpace(v); strings.TrimSpace(k) {
		case "ExecStart":
			u.ExecStart = strings.Fields(strings.TrimLeft(v, "-@:+!"))
		case "CapabilityBoundingSet":
			if u.Bounding == nil {
				u.Bounding = []string{}
			}
			u.Bounding = append(u.Bounding, strings.Fields(v)...)
		case "NoNewPrivileges":
			u.NoNewPrivs = yes(v)
		case "SystemCallFilter":
			u.Filter = append(u.Filter, v)
		case "SystemCallErrorNumber":
			u.ErrorNumber = v
		case "SystemCallArchitectures":
			u.NativeOnly = v == "native"
		case "RestrictAddressFamilies":
			u.AddrFamilies = append(u.AddrFamilies, strings.Fields(v)...)
		case "MemoryDenyWriteExecute":
			u.DenyWriteExec = yes(v)
		case "ProtectSystem":
			u.ProtectSystem = v
		case "ProtectHome":
			u.ProtectHome = v
		case "ProtectKernelTunables":
			u.ProtectTunable = yes(v)
		case "ProtectControlGroups":
			u.ProtectCgroups = yes(v)
		case "PrivateTmp":
			u.PrivateTmp = yes(v)
		case "StateDirectory":
			for _, d := range strings.Fields(v) {
				u.StateDirs = append(u.StateDirs, "/var/lib/"+d)
			}
		case "ReadWritePaths":
			for _, d := range strings.Fields(v) {
				u.ReadWrite = append(u.ReadWrite, strings.TrimLeft(d, "-+"))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(u.ExecStart) == 0 {
		return nil, fmt.Errorf("%s: no ExecStart", path)
	}
	return u, nil
}

// capNames are the capabilities by number (linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// capNumbers maps the bounding set's names to numbers. A set starting
// with "~" lists the capabilities dropped instead.
func capNumbers(names []string) (keep []int, err error) {
	invert := len(names) > 0 && strings.HasPrefix(names[0], "~")
	set := map[int]bool{}
	for _, n := range names {
		i := slices.Index(capNames, strings.ToUpper(strings.TrimPrefix(n, "~")))
		if i < 0 {
			return nil, fmt.Errorf("capability %q is not known", n)
		}
		set[i] = true
	}
	for i := range capNames {
		if set[i] != invert {
			keep = append(keep, i)
		}
	}
	return keep, nil
}

// syscallNumbers reads the system call numbers of x86-64 from the kernel
// headers.
func syscallNumbers() (map[string]int, error) {
	var lastErr error
	for _, p := range []string{"/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"} {
		b, err := os.ReadFile(p)
		if err != nil {
			lastErr = err
			continue
		}
		m := map[string]int{}
		for l := range strings.Lines(string(b)) {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "#define" && strings.HasPrefix(f[1], "__NR_") {
				if v, err := strconv.Atoi(f[2]); err == nil {
					m[strings.TrimPrefix(f[1], "__NR_")] = v
				}
			}
		}
		if len(m) > 100 {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no kernel header lists the system call numbers (install linux-libc-dev): %w", lastErr)
}

// BoundingMask is the bounding set as /proc/PID/status shows it (CapBnd).
func (u *Unit) BoundingMask() (uint64, error) {
	if u.Bounding == nil {
		return 1<<len(capNames) - 1, nil
	}
	keep, err := capNumbers(u.Bounding)
	var m uint64
	for _, c := range keep {
		m |= 1 << c
	}
	return m, err
}
