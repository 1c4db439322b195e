package inject

// The seccomp filter evaluator, on programs written as the kernel's
// checker accepts them (the real filters, read from real processes, are
// run by cmd/memdoctor's TestSandboxedTargetsUnharmed).

import (
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Instruction codes (include/uapi/linux/bpf_common.h).
const (
	ldWAbs  = 0x20
	ldImm   = 0x00
	ldMem   = 0x60
	ldxImm  = 0x01
	st      = 0x02
	aluAndK = 0x54
	aluDivX = 0x3c
	jeqK    = 0x15
	jsetK   = 0x45
	ja      = 0x05
	retK    = 0x06
	retA    = 0x16
	tax     = 0x07
)

func stmt(code uint16, k uint32) SockFilter { return SockFilter{Code: code, K: k} }
func jmp(code uint16, k uint32, jt, jf uint8) SockFilter {
	return SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
}

// archCheck is how filters start: kill anything not x86-64.
var archCheck = []SockFilter{
	stmt(ldWAbs, 4),
	jmp(jeqK, auditArchX8664, 1, 0),
	stmt(retK, seccompRetKillProcess),
	stmt(ldWAbs, 0),
}

func prog(tail ...SockFilter) []SockFilter {
	return append(append([]SockFilter(nil), archCheck...), tail...)
}

var (
	killMmap = prog(
		jmp(jeqK, 9, 0, 1),
		stmt(retK, seccompRetKillProcess),
		stmt(retK, seccompRetAllow),
	)
	// mmap or mprotect of writable and executable memory fails with EPERM.
	mdwe = prog(
		jmp(jeqK, 9, 1, 0),
		jmp(jeqK, 10, 0, 4),
		stmt(ldWAbs, 32), // args[2], low half
		stmt(aluAndK, 0x2|0x4),
		jmp(jeqK, 0x2|0x4, 0, 1),
		stmt(retK, seccompRetErrno|1),
		stmt(retK, seccompRetAllow),
	)
)

func TestBPFProof(t *testing.T) {
	mmapRW := Syscall{Name: "mmap", Nr: 9, Args: [6]uint64{2: 3}, Known: 1 << 2}
	mmapAny := Syscall{Name: "mmap", Nr: 9}
	read := Syscall{Name: "read", Nr: 0}
	for _, c := range []struct {
		name string
		prog []SockFilter
		call Syscall
		want string // "" when proven allowed, else part of the error
	}{
		{"kill on mmap, mmap", killMmap, mmapRW, "may kill the process (SECCOMP_RET_KILL_PROCESS) on mmap"},
		{"kill on mmap, read", killMmap, read, ""},
		{"mdwe, mmap read-write", mdwe, mmapRW, ""},
		{"mdwe, mmap of any protection", mdwe, mmapAny, "may fail it with errno 1 (SECCOMP_RET_ERRNO) on mmap"},
		{"mdwe, read", mdwe, read, ""},
		{"the high half of a known argument", prog(
			stmt(ldWAbs, 36), // args[2] >> 32
			jmp(jeqK, 0, 1, 0),
			stmt(retK, seccompRetTrap),
			stmt(retK, seccompRetAllow),
		), mmapRW, ""},
		{"the instruction pointer is unknown", prog(
			stmt(ldWAbs, 8),
			jmp(jsetK, 1, 0, 1),
			stmt(retK, seccompRetTrace),
			stmt(retK, seccompRetLog),
		), read, "may hand it to a tracer (SECCOMP_RET_TRACE)"},
		{"scratch memory", prog(
			stmt(st, 3),
			stmt(ldImm, 7),
			stmt(ldMem, 3),
			jmp(jeqK, 0, 0, 1),
			stmt(retK, seccompRetAllow),
			stmt(retK, seccompRetKillThread),
		), read, ""},
		{"division by an unknown X", prog(
			stmt(ldWAbs, 16),
			stmt(tax, 0),
			stmt(ldImm, 100),
			stmt(aluDivX, 0),
			stmt(retK, seccompRetAllow),
		), read, "kill the thread (SECCOMP_RET_KILL_THREAD)"},
		{"RET A of an unknown value", prog(
			stmt(ldWAbs, 16),
			stmt(retA, 0),
		), read, "computed from what is not known"},
		{"RET A of a known value", prog(
			stmt(ldImm, seccompRetAllow),
			stmt(retA, 0),
		), read, ""},
		{"a jump past the end", prog(stmt(ja, 10)), read, "past its end"},
		{"no return", prog(stmt(ldImm, 1)), read, "past its end"},
		{"an unknown action", prog(stmt(retK, 0x12340000)), read, "which the kernel treats as kill the process"},
		{"a load outside seccomp_data", prog(stmt(ldWAbs, 64), stmt(retK, seccompRetAllow)), read, "offset 64"},
	} {
		err := proveSyscalls([][]SockFilter{c.prog}, []Syscall{c.call})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// Every filter of the chain must allow the call.
	if err := proveSyscalls([][]SockFilter{mdwe, killMmap}, []Syscall{mmapRW}); err == nil || !strings.Contains(err.Error(), "filter 2 of 2") {
		t.Errorf("a chain whose older filter kills mmap: %v", err)
	}
}

// explosive has 2^16 paths that never converge: each comparison on an
// unknown argument stores a different constant in a scratch word.
func explosive() []SockFilter {
	var p []SockFilter
	for i := uint32(0); i < 16; i++ {
		p = append(p,
			stmt(ldWAbs, 16+8*(i%6)),
			jmp(jeqK, i, 0, 2),
			stmt(ldImm, i),
			stmt(ja, 1),
			stmt(ldImm, i+100),
			stmt(st, i),
		)
	}
	return append(p, stmt(retK, seccompRetAllow))
}

// A filter built to make the proof explode is refused quickly, in bounded
// memory.
func TestBPFProofBounded(t *testing.T) {
	for _, c := range []struct {
		name    string
		filters [][]SockFilter
		want    string
	}{
		{"2^16 states", [][]SockFilter{explosive()}, "distinct states"},
		// 2^12 states, each then running 4000 instructions.
		{"long paths", [][]SockFilter{append(explosive()[:12*6], append(make([]SockFilter, 4000), stmt(retK, seccompRetAllow))...)}, "steps"},
		// Many filters of 2^13 states each: the budget is the proof's.
		{"many filters", func() [][]SockFilter {
			p := append(explosive()[:13*6], stmt(retK, seccompRetAllow))
			var fs [][]SockFilter
			for i := 0; i < 1000; i++ {
				fs = append(fs, p)
			}
			return fs
		}(), "steps"},
	} {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		start := time.Now()
		err := proveSyscalls(c.filters, []Syscall{{Name: "read", Nr: 0}, {Name: "write", Nr: 1}})
		took := time.Since(start)
		runtime.ReadMemStats(&m1)
		// Every byte allocated, freed or not: a bound on the peak.
		alloc := m1.TotalAlloc - m0.TotalAlloc
		if alloc > 64<<20 {
			t.Errorf("%s: %d MiB allocated", c.name, alloc>>20)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want the bound on %s", c.name, err, c.want)
		}
		t.Logf("%s: refused in %s, %.1f MiB allocated: %v", c.name, took.Round(time.Millisecond), float64(alloc)/(1<<20), err)
		if took > 5*time.Second {
			t.Errorf("%s: took %s", c.name, took)
		}
	}
}

// FuzzBPFVerdicts: any program (the kernel's checker is not trusted here)
// ends in a verdict set or an error, within the bounds.
func FuzzBPFVerdicts(f *testing.F) {
	enc := func(p []SockFilter) []byte {
		b := make([]byte, 8*len(p))
		for i, in := range p {
			binary.LittleEndian.PutUint16(b[8*i:], in.Code)
			b[8*i+2], b[8*i+3] = in.Jt, in.Jf
			binary.LittleEndian.PutUint32(b[8*i+4:], in.K)
		}
		return b
	}
	for _, p := range [][]SockFilter{killMmap, mdwe, explosive()} {
		f.Add(uint16(9), enc(p))
	}
	f.Fuzz(func(t *testing.T, nr uint16, data []byte) {
		if len(data) > 8*4096 {
			return
		}
		p := make([]SockFilter, len(data)/8)
		for i := range p {
			p[i] = SockFilter{Code: binary.LittleEndian.Uint16(data[8*i:]), Jt: data[8*i+2], Jf: data[8*i+3], K: binary.LittleEndian.Uint32(data[8*i+4:])}
		}
		budget := maxBPFSteps
		rets, err := bpfVerdicts(p, Syscall{Name: "fuzz", Nr: int(nr), Args: [6]uint64{1: 3}, Known: 2}, &budget)
		if err == nil && len(rets) == 0 {
			t.Fatalf("no verdict and no error for %v", p)
		}
	})
}
