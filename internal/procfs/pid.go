package procfs

// More per-process files (fs/proc/array.c, fs/proc/base.c):
//
// /proc/PID/stat and /proc/PID/task/TID/stat (2.6+): one line, the pid,
// the command name in parentheses, then blank-separated fields. The name
// is the process' to choose and may hold blanks and parentheses, so the
// fields start after the line's last ')':
//
//	1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 ... 17 3 0 0 ...
//	     field 2          3 4 ...         9 flags       14 utime, 15 stime, 22 starttime
//
// /proc/PID/environ: the environment the process was started with, each
// "NAME=value" followed by a NUL (a process may overwrite it; prctl can
// move its end, so it is read within a bound). It holds secrets: only the
// variables asked for are kept.
//
// /proc/PID/task/TID/syscall (2.6.27+, CONFIG_HAVE_ARCH_TRACEHOOK): the
// system call a blocked thread is in, its six arguments, stack pointer and
// program counter, in hex but the number:
//
//	202 0x7f12 0x80 0x0 0x0 0x0 0x0 0x7ffd 0x7f34
//	running
//	-1 0x7ffd 0x7f34      (blocked, not in a system call)

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// PIDStat is what memdoctor reads of proc/PID/stat.
type PIDStat struct {
	State byte   // R, S, D, T, t, Z, X...
	PPID  int    // the parent's pid
	Flags uint64 // the task's PF_* flags (include/linux/sched.h)
	// UTimeTicks and STimeTicks are the CPU time in user and kernel mode,
	// in clock ticks (USER_HZ, 100 on every Linux architecture).
	UTimeTicks, STimeTicks uint64
	// StartTimeTicks is when the process started, in clock ticks since
	// boot.
	StartTimeTicks uint64
}

// pidStatFields is how many fields after the command name ParsePIDStat
// needs (through starttime, field 22).
const pidStatFields = 20

// ParsePIDStat parses proc/PID/stat (or a task's stat).
func ParsePIDStat(data []byte, file string) (PIDStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return PIDStat{}, perr(file, 1, "no ')' closing the command name")
	}
	var f [pidStatFields]string
	rest := string(data[i+1:])
	for n := range f {
		f[n], rest = nextField(rest)
		if f[n] == "" {
			return PIDStat{}, perr(file, 1, "%d fields after the command name, want at least %d", n, pidStatFields)
		}
	}
	if c := f[0][0]; len(f[0]) != 1 || (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
		return PIDStat{}, perr(file, 1, "state %s is not a letter", quote(f[0]))
	}
	var st PIDStat
	st.State = f[0][0]
	ppid, ok1 := atoi(f[1])
	flags, ok2 := atou64(f[6])
	ut, ok3 := atou64(f[11])
	stt, ok4 := atou64(f[12])
	start, ok5 := atou64(f[19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || ppid < 0 || ppid > 1<<31 {
		return PIDStat{}, perr(file, 1, "a field is not a number")
	}
	st.PPID, st.Flags, st.UTimeTicks, st.STimeTicks, st.StartTimeTicks = int(ppid), flags, ut, stt, start
	return st, nil
}

// ProcStat reads proc/PID/stat.
func (f FS) ProcStat(pid int) (PIDStat, error) {
	return f.readPIDStat(procFile(pid, "stat"))
}

// TaskStat reads proc/PID/task/TID/stat, one thread's.
func (f FS) TaskStat(pid, tid int) (PIDStat, error) {
	return f.readPIDStat(taskFile(pid, tid, "stat"))
}

// SelfStat reads proc/self/stat, the calling process'.
func (f FS) SelfStat() (PIDStat, error) {
	return f.readPIDStat("proc/self/stat")
}

func (f FS) readPIDStat(name string) (PIDStat, error) {
	return parseOnce(f, name, func(data []byte) (PIDStat, error) {
		return ParsePIDStat(data, name)
	})
}

// SelfStatm reads proc/self/statm, the calling process'.
func (f FS) SelfStatm() (Statm, error) {
	const name = "proc/self/statm"
	return parseOnce(f, name, func(data []byte) (Statm, error) {
		return ParseStatm(data, name)
	})
}

// TaskStatus reads proc/PID/task/TID/status, one thread's (Seccomp,
// TracerPid and the signal masks are per thread).
func (f FS) TaskStatus(pid, tid int) (KV, error) {
	name := taskFile(pid, tid, "status")
	return parseOnce(f, name, func(data []byte) (KV, error) {
		return ParseStatus(data, name)
	})
}

// TIDs lists the threads of a process (proc/PID/task), in directory
// order; entries that are not numbers are skipped.
func (f FS) TIDs(pid int) ([]int, error) {
	ents, err := f.ReadDir(procFile(pid, "task"))
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}

func taskFile(pid, tid int, name string) string {
	return "proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/" + name
}

// Syscall is what proc/PID/task/TID/syscall says about a thread.
type Syscall struct {
	// Nr is the system call the thread is blocked in; -1 when it runs
	// (Running), is blocked outside a system call, or the file is empty.
	Nr      int
	Running bool
	// Args are the call's six arguments; Full is false when the line did
	// not hold them.
	Args [6]uint64
	Full bool
}

// ParseSyscall parses proc/PID/task/TID/syscall. It never fails: what it
// cannot read is left at Nr -1 or without Args.
func ParseSyscall(data []byte) Syscall {
	s := Syscall{Nr: -1}
	f := strings.Fields(string(data))
	switch {
	case len(f) == 0:
		return s
	case f[0] == "running":
		s.Running = true
		return s
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return s
	}
	s.Nr = n
	if len(f) >= 7 {
		s.Full = true
		for i := range s.Args {
			s.Args[i], _ = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		}
	}
	return s
}

// TaskSyscall reads proc/PID/task/TID/syscall.
func (f FS) TaskSyscall(pid, tid int) (Syscall, error) {
	data, err := f.ReadFile(taskFile(pid, tid, "syscall"))
	if err != nil {
		return Syscall{Nr: -1}, err
	}
	return ParseSyscall(data), nil
}

// Environ is what is kept of a process' initial environment.
type Environ struct {
	// Vars holds the first value of each variable asked for that is set,
	// as getenv finds it.
	Vars map[string]string
	// ArenaMax, ArenaMaxFrom and ArenaMaxSet are glibc's arena cap
	// (ArenaMaxFromEnviron).
	ArenaMax     int
	ArenaMaxFrom string
	ArenaMaxSet  bool
}

// Lookup returns a variable asked for, and whether it is set.
func (e Environ) Lookup(name string) (string, bool) {
	v, ok := e.Vars[name]
	return v, ok
}

// ProcEnviron reads proc/PID/environ and keeps the named variables (the
// first value of each) and glibc's arena cap; every other variable is
// skipped unread and the bytes read are cleared: environments hold
// secrets. At most environMax bytes are read; an entry cut by that bound
// is dropped.
func (f FS) ProcEnviron(pid int, names ...string) (Environ, error) {
	fh, err := f.fsys.Open(clean(procFile(pid, "environ")))
	if err != nil {
		return Environ{}, err
	}
	defer func() { _ = fh.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(fh, environMax+1))
	defer clear(data) // the rest of the environment is not kept
	if err != nil {
		return Environ{}, err
	}
	if len(data) > environMax {
		data = data[:environMax]
		if i := bytes.LastIndexByte(data, 0); i >= 0 {
			data = data[:i+1]
		} else {
			data = data[:0]
		}
	}
	return ParseEnviron(data, names...), nil
}

// ParseEnviron finds the named variables and glibc's arena cap in a
// NUL-separated environment (see ProcEnviron). It keeps no reference to
// data.
func ParseEnviron(data []byte, names ...string) Environ {
	e := Environ{Vars: make(map[string]string, len(names))}
	rest := data
	for len(rest) > 0 {
		entry := rest
		if i := bytes.IndexByte(rest, 0); i >= 0 {
			entry, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		for _, n := range names {
			if _, seen := e.Vars[n]; !seen && len(entry) > len(n) && entry[len(n)] == '=' && string(entry[:len(n)]) == n {
				e.Vars[n] = string(entry[len(n)+1:])
			}
		}
	}
	if n, from, ok, err := ArenaMaxFromEnviron(string(data)); err == nil && ok {
		e.ArenaMax, e.ArenaMaxFrom, e.ArenaMaxSet = n, from, true
	}
	return e
}
