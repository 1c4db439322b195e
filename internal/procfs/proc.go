package procfs

// Per-process files (fs/proc/array.c, fs/proc/task_mmu.c, fs/proc/base.c):
//
// /proc/PID/status, "Key:\tvalue" (2.6+; RssAnon/RssFile/RssShmem 4.5+):
//
//	Name:	bash
//	Umask:	0022                   octal: kept as text
//	State:	S (sleeping)
//	VmRSS:	    5596 kB
//	SigBlk:	0000000000010000       hex mask: kept as text
//	Cpus_allowed:	3              hex mask: kept as text
//
// /proc/PID/statm, seven counts in pages (2.6+): size resident shared text
// lib data dirty; lib and dirty are always 0 since 2.6:
//
//	1739 1399 700 193 0 758 0
//
// /proc/PID/smaps_rollup (4.14+; Pss_Anon/File/Shmem ≈5.7, Pss_Dirty ≈6.0):
// a pseudo-mapping header spanning the address space, then smaps' fields
// summed over every mapping. It walks the page tables under the target's
// mmap lock, so it costs milliseconds per GB mapped:
//
//	559aede6b000-7fffdd42d000 ---p 00000000 00:00 0                          [rollup]
//	Rss:                5596 kB
//	Pss:                3283 kB
//
// /proc/PID/comm (2.6.33+): the 15-byte task name and a newline.
// /proc/PID/cmdline: the arguments, each followed by a NUL (a process may
// rewrite it; kernel threads have an empty one).
//
// A process can exit at any moment: opening its files then fails with
// ENOENT, reading them with ESRCH. Both are returned as they are, and
// IsNotExist reports true for them. smaps_rollup of a process without an mm
// (a kernel thread, a zombie) also fails with ESRCH.

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

func procFile(pid int, name string) string {
	return "proc/" + strconv.Itoa(pid) + "/" + name
}

// PIDs lists the numeric entries of proc, ascending.
func (f FS) PIDs() ([]int, error) {
	var pids []int
	err := f.EachName("proc", func(name string) {
		if name == "" || name[0] < '0' || name[0] > '9' {
			return
		}
		if n, ok := atou(name); ok && n <= 1<<31 {
			pids = append(pids, int(n))
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(pids)
	return pids, nil
}

// ProcStatus reads proc/PID/status.
func (f FS) ProcStatus(pid int) (KV, error) {
	name := procFile(pid, "status")
	return parseOnce(f, name, func(data []byte) (KV, error) {
		return ParseStatus(data, name)
	})
}

// StatusBrief is what the process table needs of proc/PID/status, read
// for every process on the host: a whole status is some 55 keys, and
// parsed into maps it was a third of a check's allocation by parsers.
// Numbers are as ProcStatus reads them (kB in bytes); the text values are
// verbatim, trimmed.
type StatusBrief struct {
	Name, UID, GID, Groups, NSpid string
	RSS, Anon, File, Shmem, Swap  int64 // VmRSS, RssAnon, RssFile, RssShmem, VmSwap
	Threads                       int64
	// HasRSS is false when VmRSS is absent (a kernel thread) or not a
	// number.
	HasRSS bool
}

// OwnPID is the process' pid in its own pid namespace: NSpid's last
// field (4.1+), else pid.
func (s StatusBrief) OwnPID(pid int) int {
	if _, last := lastField(s.NSpid); last != "" {
		if n, ok := atoi(last); ok && n > 0 && n <= math.MaxInt32 {
			return int(n)
		}
	}
	return pid
}

// ProcStatusBrief reads what StatusBrief holds of proc/PID/status. Every
// line is checked as ProcStatus checks it; only the kept values are
// copied out of the read buffer.
func (f FS) ProcStatusBrief(pid int) (StatusBrief, error) {
	name := procFile(pid, "status")
	return parseOnce(f, name, func(data []byte) (StatusBrief, error) {
		return ParseStatusBrief(data, name)
	})
}

// ParseStatusBrief parses what StatusBrief holds of a proc/PID/status;
// file names it in errors.
func ParseStatusBrief(data []byte, file string) (StatusBrief, error) {
	var st StatusBrief
	// A view of data, never kept: the text values are copied below.
	s := unsafe.String(unsafe.SliceData(data), len(data))
	var text [5]string // Name, Uid, Gid, Groups, NSpid as views of s
	err := eachKey(s, file, 1, func(_ int, key, val string) error {
		var num *int64
		switch key {
		case "Name":
			text[0] = val
		case "Uid":
			text[1] = val
		case "Gid":
			text[2] = val
		case "Groups":
			text[3] = val
		case "NSpid":
			text[4] = val
		case "VmRSS":
			v, ok := parseNumber(val)
			st.RSS, st.HasRSS = v, ok
		case "RssAnon":
			num = &st.Anon
		case "RssFile":
			num = &st.File
		case "RssShmem":
			num = &st.Shmem
		case "VmSwap":
			num = &st.Swap
		case "Threads":
			num = &st.Threads
		}
		if num != nil {
			*num, _ = parseNumber(val) // 0 when not a number, as KV.Value
		}
		return nil
	})
	if err != nil {
		return StatusBrief{}, err
	}
	// One allocation for the five texts.
	n := 0
	for _, t := range text {
		n += len(t)
	}
	b := make([]byte, 0, n)
	for _, t := range text {
		b = append(b, t...)
	}
	all := unsafe.String(unsafe.SliceData(b), len(b))
	for i, dst := range []*string{&st.Name, &st.UID, &st.GID, &st.Groups, &st.NSpid} {
		*dst, all = all[:len(text[i])], all[len(text[i]):]
	}
	return st, nil
}

// ParseStatus parses proc/PID/status: kB values in bytes, counts as
// numbers, everything else (Name, State, Uid, hex masks, Umask) as text.
func ParseStatus(data []byte, file string) (KV, error) {
	return parseKV(string(data), file, kvOptions{text: statusTextKey})
}

// statusTextKey reports status keys that are never decimal numbers even
// when they look like one: the name, and hex masks shorter than their
// zero-padded siblings.
func statusTextKey(key string) bool {
	switch key {
	case "Name", "Cpus_allowed", "Mems_allowed", "Umask":
		return true
	}
	return strings.HasPrefix(key, "Sig") && key != "SigQ" || strings.HasPrefix(key, "Cap") || key == "ShdPnd"
}

// ProcOOMScoreAdj reads proc/PID/oom_score_adj: how the OOM killer's
// choice is biased for the process, -1000 (never chosen) to 1000.
func (f FS) ProcOOMScoreAdj(pid int) (int, error) {
	name := procFile(pid, "oom_score_adj")
	return parseOnce(f, name, func(data []byte) (int, error) {
		return ParseOOMScoreAdj(data, name)
	})
}

// ParseOOMScoreAdj parses proc/PID/oom_score_adj: one integer from -1000
// to 1000.
func ParseOOMScoreAdj(data []byte, file string) (int, error) {
	s := trimSpace(string(data))
	v, ok := atoi(s)
	if !ok || v < -1000 || v > 1000 {
		return 0, perr(file, 1, "%s is not an oom_score_adj (-1000 to 1000)", quote(s))
	}
	return int(v), nil
}

// ProcStatm reads proc/PID/statm.
func (f FS) ProcStatm(pid int) (Statm, error) {
	name := procFile(pid, "statm")
	return parseOnce(f, name, func(data []byte) (Statm, error) {
		return ParseStatm(data, name)
	})
}

// ParseStatm parses proc/PID/statm.
func ParseStatm(data []byte, file string) (Statm, error) {
	var m Statm
	s := string(data)
	dst := [...]*int64{&m.Size, &m.Resident, &m.Shared, &m.Text, &m.Lib, &m.Data, &m.Dirty}
	rest := s
	for i := range dst {
		var f string
		f, rest = nextField(rest)
		v, ok := atou(f)
		if !ok {
			return Statm{}, perr(file, 1, "%s: want 7 page counts", quote(s))
		}
		*dst[i] = v
	}
	if trimSpace(rest) != "" {
		return Statm{}, perr(file, 1, "%s: want 7 page counts", quote(s))
	}
	return m, nil
}

// ProcSmapsRollup reads proc/PID/smaps_rollup (4.14+), without its header
// line. Values are bytes. A process without memory (kernel thread, zombie)
// gives ESRCH, as a vanished one does.
func (f FS) ProcSmapsRollup(pid int) (KV, error) {
	name := procFile(pid, "smaps_rollup")
	return parseOnce(f, name, func(data []byte) (KV, error) {
		return ParseSmapsRollup(data, name)
	})
}

// ParseSmapsRollup parses proc/PID/smaps_rollup, skipping the "[rollup]"
// header line. Every value must be a number.
func ParseSmapsRollup(data []byte, file string) (KV, error) {
	s := string(data)
	first := 1
	if l, rest := nextLine(s); l != "" {
		if tok, _ := nextField(l); !strings.Contains(tok, ":") {
			s, first = rest, 2 // "start-end perms offset dev inode [rollup]"
		}
	}
	return parseKV(s, file, kvOptions{numeric: true, firstLine: first})
}

// ProcComm reads proc/PID/comm without its trailing newline.
func (f FS) ProcComm(pid int) (string, error) {
	data, err := f.ReadFile(procFile(pid, "comm"))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// ProcCmdline reads proc/PID/cmdline split at NUL bytes (the trailing
// empty element dropped). A kernel thread gives an empty list.
func (f FS) ProcCmdline(pid int) ([]string, error) {
	data, err := f.ReadFile(procFile(pid, "cmdline"))
	if err != nil {
		return nil, err
	}
	return splitCmdline(string(data)), nil
}

func splitCmdline(s string) []string {
	s = strings.TrimSuffix(s, "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// OwnPID returns the pid a process sees as its own (getpid() inside its pid
// namespace): the last field of NSpid in its status, or pid when the kernel
// has no NSpid (before 4.1) or the field is unreadable.
func OwnPID(st KV, pid int) int {
	if n, ok := st.Num["NSpid"]; ok {
		return int(n)
	}
	if f := strings.Fields(st.Text["NSpid"]); len(f) > 0 {
		if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
			return n
		}
	}
	return pid
}

// environMax bounds how much of proc/PID/environ is read. exec allows the
// arguments and environment together a quarter of the stack limit, at
// most 6 MiB, so every environment exec made is read whole; a process that
// moved its environment's end (prctl PR_SET_MM_ENV_END) is cut there.
const environMax = 8 << 20

// ProcArenaMax reads the glibc malloc arena cap a process was started
// with: glibc.malloc.arena_max in GLIBC_TUNABLES, else MALLOC_ARENA_MAX
// (its older alias). ok is false when neither sets a cap (unset, 0 or not a
// number: glibc's default, 8 arenas a CPU on 64-bit). It is the process'
// environment at exec: a program that changed it later is not seen.
func (f FS) ProcArenaMax(pid int) (limit int, from string, ok bool, err error) {
	e, err := f.ProcEnviron(pid)
	if err != nil {
		return 0, "", false, err
	}
	return e.ArenaMax, e.ArenaMaxFrom, e.ArenaMaxSet, nil
}

// ArenaMaxFromEnviron finds the arena cap in a NUL-separated environment
// (see ProcArenaMax).
func ArenaMaxFromEnviron(env string) (limit int, from string, ok bool, err error) {
	// glibc (2.36) parses GLIBC_TUNABLES in place, ending each tunable
	// with a NUL: the environment then reads
	// "GLIBC_TUNABLES=glibc.malloc.check=0", "glibc.malloc.arena_max=3".
	// The tunables after the first are the entries that follow it and
	// start with "glibc.".
	var alias, tunable string
	inTunables := false
	for _, kv := range strings.Split(env, "\x00") {
		list, ok := strings.CutPrefix(kv, "GLIBC_TUNABLES=")
		if !ok && inTunables && strings.HasPrefix(kv, "glibc.") {
			list, ok = kv, true
		}
		inTunables = ok
		switch {
		case ok:
			for _, t := range strings.Split(list, ":") {
				if v, found := strings.CutPrefix(t, "glibc.malloc.arena_max="); found {
					tunable = v
				}
			}
		case strings.HasPrefix(kv, "MALLOC_ARENA_MAX="):
			alias = strings.TrimPrefix(kv, "MALLOC_ARENA_MAX=")
		}
	}
	for _, c := range []struct{ v, from string }{{tunable, "GLIBC_TUNABLES=glibc.malloc.arena_max"}, {alias, "MALLOC_ARENA_MAX"}} {
		if n, e := strconv.Atoi(c.v); e == nil && n > 0 {
			return n, c.from, true, nil
		}
	}
	return 0, "", false, nil
}
