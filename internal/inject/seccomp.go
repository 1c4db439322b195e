package inject

// Seccomp: proving that the calls memdoctor makes in a sandboxed thread
// make no system call its filters forbid.
//
// A thread in seccomp strict mode (mode 1) may only read, write, exit and
// sigreturn: anything else kills it, so it is never called into. A thread
// in filter mode (mode 2) runs every system call through a chain of
// classic BPF programs, and the most severe verdict wins: SIGSYS, an
// error, or the death of the whole process (SECCOMP_RET_KILL_PROCESS). A
// function memdoctor calls there (malloc_info, malloc_trim) makes the
// thread's system calls, so before the first call the session reads every
// filter of the stopped thread (PTRACE_SECCOMP_GET_FILTER) and runs each
// on every system call the caller declared, with what is known of their
// arguments: what is unknown (most arguments, the instruction pointer)
// takes every value, so a comparison on it follows both branches. Only
// when every path of every filter ends in SECCOMP_RET_ALLOW or
// SECCOMP_RET_LOG is the call sequence allowed; anything else (kill,
// trap, an errno, a user notification, a trace event, a division by an X
// that may be zero) refuses the session with nothing called.
//
// The programs are the kernel's own copy of what was installed; their
// format is struct sock_filter (include/uapi/linux/filter.h) run on
// struct seccomp_data (include/uapi/linux/seccomp.h):
//
//	int   nr;                    offset 0
//	__u32 arch;                  offset 4  (AUDIT_ARCH_X86_64 0xc000003e)
//	__u64 instruction_pointer;   offset 8
//	__u64 args[6];               offset 16, 8 bytes each, little-endian
//
// The kernel accepted each program, so only the instructions its checker
// allows appear (seccomp_check_filter): 32-bit absolute loads, the
// length, immediates, scratch memory, ALU, forward jumps, RET K and RET A.

import (
	"fmt"
	"sort"
	"strings"
)

// Syscall is one system call the calls of a session may make, with what is
// known of its arguments in advance.
type Syscall struct {
	Name string
	Nr   int
	// Args[i] is known when bit i of Known is set; the others may take
	// any value.
	Args  [6]uint64
	Known uint8
}

// SockFilter is one classic BPF instruction (struct sock_filter).
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// Seccomp return actions (include/uapi/linux/seccomp.h).
const (
	seccompRetKillProcess = 0x80000000
	seccompRetKillThread  = 0x00000000
	seccompRetTrap        = 0x00030000
	seccompRetErrno       = 0x00050000
	seccompRetUserNotif   = 0x7fc00000
	seccompRetTrace       = 0x7ff00000
	seccompRetLog         = 0x7ffc0000
	seccompRetAllow       = 0x7fff0000
	seccompRetActionFull  = 0xffff0000
)

// auditArchX8664 is what seccomp_data.arch holds for a 64-bit x86 call.
const auditArchX8664 = 0xc000003e

// seccompDataLen is sizeof(struct seccomp_data).
const seccompDataLen = 64

// actionName names a seccomp return value.
func actionName(ret uint32) string {
	switch ret & seccompRetActionFull {
	case seccompRetKillProcess:
		return "kill the process (SECCOMP_RET_KILL_PROCESS)"
	case seccompRetKillThread:
		return "kill the thread (SECCOMP_RET_KILL_THREAD)"
	case seccompRetTrap:
		return "send SIGSYS (SECCOMP_RET_TRAP)"
	case seccompRetErrno:
		return fmt.Sprintf("fail it with errno %d (SECCOMP_RET_ERRNO)", ret&0xffff)
	case seccompRetUserNotif:
		return "hand it to a supervisor (SECCOMP_RET_USER_NOTIF)"
	case seccompRetTrace:
		return "hand it to a tracer (SECCOMP_RET_TRACE)"
	case seccompRetLog:
		return "log it (SECCOMP_RET_LOG)"
	case seccompRetAllow:
		return "allow it"
	}
	return fmt.Sprintf("return %#x, which the kernel treats as kill the process", ret)
}

// allows reports whether a return value lets the call run as if no filter
// were there.
func allows(ret uint32) bool {
	a := ret & seccompRetActionFull
	return a == seccompRetAllow || a == seccompRetLog
}

// aval is a 32-bit value that is known, or may be anything.
type aval struct {
	v     uint32
	known bool
}

// bpfState is one point of a path through a program.
type bpfState struct {
	pc   int
	a, x aval
	mem  [16]aval
}

// maxBPFStates bounds the work on one program and one system call (a few
// MiB), maxBPFSteps the instructions run over the whole proof (well under
// a second): what does not fit is not proven. A real filter has at most 4096 instructions,
// and its paths converge (after a comparison on an unknown argument both
// branches hold the same registers), so it visits far fewer.
const (
	maxBPFStates = 1 << 14
	maxBPFSteps  = 1 << 22
	// stateCost is what a new state counts against the steps: keeping
	// it costs as much as running about that many instructions.
	stateCost = 64
)

// bpfVerdicts runs prog on every seccomp_data that matches sc (arch
// x86-64, nr, the known arguments; the rest unknown) and returns the set
// of values it may return. Each instruction run counts against *budget.
func bpfVerdicts(prog []SockFilter, sc Syscall, budget *int) (map[uint32]bool, error) {
	field := func(off uint32) aval {
		switch {
		case off == 0:
			return aval{uint32(int32(sc.Nr)), true}
		case off == 4:
			return aval{auditArchX8664, true}
		case off >= 16 && off < seccompDataLen:
			i := (off - 16) / 8
			if sc.Known&(1<<i) == 0 {
				return aval{}
			}
			v := sc.Args[i]
			if (off-16)%8 == 4 {
				v >>= 32
			}
			return aval{uint32(v), true}
		}
		return aval{} // the instruction pointer
	}
	out := map[uint32]bool{}
	seen := map[bpfState]bool{}
	stack := []bpfState{{}}
	push := func(s bpfState) {
		if !seen[s] {
			seen[s] = true
			stack = append(stack, s)
			*budget -= stateCost
		}
	}
paths:
	for len(stack) > 0 {
		if len(seen) > maxBPFStates {
			return nil, fmt.Errorf("the filter reaches more than %d distinct states for %s", maxBPFStates, sc.Name)
		}
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for {
			if *budget--; *budget < 0 {
				return nil, fmt.Errorf("proving the filters takes more than %d steps", maxBPFSteps)
			}
			if s.pc < 0 || s.pc >= len(prog) {
				return nil, fmt.Errorf("the filter runs past its end at instruction %d", s.pc)
			}
			in := prog[s.pc]
			s.pc++
			var src aval
			if in.Code&0x08 != 0 { // BPF_X
				src = s.x
			} else {
				src = aval{in.K, true}
			}
			switch cls := in.Code & 0x07; cls {
			case 0x00, 0x01: // BPF_LD, BPF_LDX
				var v aval
				switch mode := in.Code & 0xe0; {
				case mode == 0x00 && in.Code&0x18 == 0: // IMM
					v = aval{in.K, true}
				case mode == 0x20 && in.Code&0x18 == 0 && cls == 0x00: // W ABS
					if in.K%4 != 0 || in.K >= seccompDataLen {
						return nil, fmt.Errorf("the filter loads seccomp_data offset %d", in.K)
					}
					v = field(in.K)
				case mode == 0x60: // MEM
					if in.K >= 16 {
						return nil, fmt.Errorf("the filter loads scratch word %d", in.K)
					}
					v = s.mem[in.K]
				case mode == 0x80: // LEN
					v = aval{seccompDataLen, true}
				default:
					return nil, fmt.Errorf("instruction %d: code %#x is not one seccomp accepts", s.pc-1, in.Code)
				}
				if cls == 0x00 {
					s.a = v
				} else {
					s.x = v
				}
			case 0x02, 0x03: // BPF_ST, BPF_STX
				if in.K >= 16 {
					return nil, fmt.Errorf("the filter stores scratch word %d", in.K)
				}
				if cls == 0x02 {
					s.mem[in.K] = s.a
				} else {
					s.mem[in.K] = s.x
				}
			case 0x04: // BPF_ALU
				op := in.Code & 0xf0
				if (op == 0x30 || op == 0x90) && (!src.known || src.v == 0) {
					// A division by zero ends the program with 0, which
					// is SECCOMP_RET_KILL_THREAD.
					out[seccompRetKillThread] = true
					if src.known {
						continue paths
					}
				}
				s.a = alu(op, s.a, src)
			case 0x05: // BPF_JMP
				op := in.Code & 0xf0
				if op == 0x00 { // JA
					s.pc += int(in.K)
					continue
				}
				taken, known := jump(op, s.a, src)
				if !known {
					other := s
					other.pc += int(in.Jf)
					push(other)
					s.pc += int(in.Jt)
					continue
				}
				if taken {
					s.pc += int(in.Jt)
				} else {
					s.pc += int(in.Jf)
				}
			case 0x06: // BPF_RET
				switch in.Code & 0x18 {
				case 0x00:
					out[in.K] = true
				case 0x10:
					if !s.a.known {
						return nil, fmt.Errorf("the filter returns a value computed from what is not known in advance for %s", sc.Name)
					}
					out[s.a.v] = true
				default:
					return nil, fmt.Errorf("instruction %d: code %#x is not one seccomp accepts", s.pc-1, in.Code)
				}
				continue paths
			case 0x07: // BPF_MISC
				if in.Code&0xf8 == 0x80 {
					s.a = s.x // TXA
				} else {
					s.x = s.a // TAX
				}
			}
		}
	}
	return out, nil
}

// alu applies a BPF ALU operation; a result that depends on an unknown
// value is unknown.
func alu(op uint16, a, b aval) aval {
	if op == 0x80 { // NEG
		return aval{-a.v, a.known}
	}
	if !a.known || !b.known {
		return aval{}
	}
	var v uint32
	switch op {
	case 0x00:
		v = a.v + b.v
	case 0x10:
		v = a.v - b.v
	case 0x20:
		v = a.v * b.v
	case 0x30:
		v = a.v / b.v
	case 0x40:
		v = a.v | b.v
	case 0x50:
		v = a.v & b.v
	case 0x60:
		if b.v >= 32 {
			return aval{0, true}
		}
		v = a.v << b.v
	case 0x70:
		if b.v >= 32 {
			return aval{0, true}
		}
		v = a.v >> b.v
	case 0x90:
		v = a.v % b.v
	case 0xa0:
		v = a.v ^ b.v
	default:
		return aval{}
	}
	return aval{v, true}
}

// jump evaluates a conditional jump; known is false when it depends on an
// unknown value.
func jump(op uint16, a, b aval) (taken, known bool) {
	if !a.known || !b.known {
		return false, false
	}
	switch op {
	case 0x10:
		return a.v == b.v, true
	case 0x20:
		return a.v > b.v, true
	case 0x30:
		return a.v >= b.v, true
	case 0x40:
		return a.v&b.v != 0, true
	}
	return false, false
}

// proveSyscalls runs every filter (the most recent first, as the kernel
// lists them) on every system call; it returns nil when all of them are
// allowed on every path, else an error naming the first that is not.
func proveSyscalls(filters [][]SockFilter, calls []Syscall) error {
	budget := maxBPFSteps
	for _, sc := range calls {
		for i, prog := range filters {
			rets, err := bpfVerdicts(prog, sc, &budget)
			if err != nil {
				return fmt.Errorf("filter %d of %d cannot be proven to allow %s: %w", i+1, len(filters), sc.Name, err)
			}
			var bad []string
			for r := range rets {
				if !allows(r) {
					bad = append(bad, actionName(r))
				}
			}
			if len(bad) > 0 {
				sort.Strings(bad)
				return fmt.Errorf("filter %d of %d may %s on %s (system call %d)", i+1, len(filters), strings.Join(bad, " or "), sc.Name, sc.Nr)
			}
		}
	}
	return nil
}

// sandbox is a thread's seccomp state, as /proc/PID/task/TID/status shows
// it (Seccomp, Seccomp_filters: Linux 3.8 and 5.9).
type sandbox struct {
	mode    int // 0 none, 1 strict, 2 filter
	filters int
}

// preloadHint is what to do instead of calling into a sandboxed process.
const preloadHint = "read it from inside instead: start it with memdoctor's preload library (memdoctor preload), which answers without any call from outside"

// refuse refuses what the status alone tells: strict mode always, a
// filter when the caller declared no system calls to prove, and, before
// the stop, a filtered thread that the stop would make call
// restart_syscall.
func (sb sandbox) refuse(pid, tid, declared int, beforeStop bool) error {
	switch {
	case sb.mode == 1:
		return fmt.Errorf("%w: thread %d of pid %d is in seccomp strict mode, where any system call but read, write, exit and sigreturn kills the process: nothing was called, and nothing will be; %s", ErrSeccomp, tid, pid, preloadHint)
	case sb.mode == 2 && declared == 0:
		return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters, and the system calls to prove against them were not declared: nothing was called", ErrSeccomp, tid, pid, sb.filters)
	case sb.mode == 2 && beforeStop && SleepRestart(pid, tid):
		return fmt.Errorf("%w: thread %d of pid %d runs under %d seccomp filters and sleeps in a system call that the kernel resumes through restart_syscall once the thread is stopped: its filters can be read only after that stop, so whether they allow restart_syscall cannot be known in advance; nothing was stopped or called (another thread, blocked elsewhere, can be)", ErrSeccomp, tid, pid, sb.filters)
	case sb.mode > 2:
		return fmt.Errorf("%w: thread %d of pid %d is in seccomp mode %d, which memdoctor does not know: nothing was called", ErrSeccomp, tid, pid, sb.mode)
	}
	return nil
}
