package procfs

// /proc/stat (fs/proc/stat.c, show_stat):
//
//	cpu  5813 0 3343 41126 381 0 96 51 0 0
//	cpu0 2023 0 1192 22144 18 0 11 21 0 0
//	intr 266047 0 0 ... (one count per IRQ)
//	ctxt 503928
//	btime 1795296016
//	processes 5829
//	procs_running 1
//	procs_blocked 0
//	softirq 160051 0 11747 6 4200 90711 0 63 25349 0 27975
//
// cpu columns, in USER_HZ ticks: user nice system idle (2.4), iowait irq
// softirq (2.6.0), steal (2.6.11), guest (2.6.24), guest_nice (2.6.33);
// older kernels print fewer and the rest read 0, columns beyond the tenth
// are ignored. Offline CPUs have no cpuN line, so ids may be sparse. Only
// the totals of intr and softirq are kept (the per-IRQ columns are long and
// not about memory); any other line goes to Other or OtherLists.

import "strings"

// Stat reads proc/stat.
func (f FS) Stat() (Stat, error) {
	return parseOnce(f, "proc/stat", func(data []byte) (Stat, error) {
		return ParseStat(data)
	})
}

const statFile = "proc/stat"

// ParseStat parses proc/stat.
func ParseStat(data []byte) (Stat, error) {
	s := string(data)
	var st Stat
	ncpu := min(strings.Count(s, "\ncpu"), len(s)/16)
	st.CPUs = make([]CPUTimes, 0, ncpu)
	st.CPUIDs = make([]int, 0, ncpu)
	sawCPU := false
	for line, t := range lines(s) {
		key, rest := nextField(t)
		if id, isCPU := cpuID(key); isCPU {
			ct, ok := parseCPUTimes(rest)
			if !ok {
				return Stat{}, perr(statFile, line, "bad cpu line %s", quote(t))
			}
			sawCPU = true
			if id < 0 {
				st.Total = ct
				continue
			}
			st.CPUs = append(st.CPUs, ct)
			st.CPUIDs = append(st.CPUIDs, int(id))
			continue
		}
		first, more := nextField(rest)
		v, ok := atoi(first)
		if !ok {
			return Stat{}, perr(statFile, line, "%s: %s is not a number", quote(key), quote(first))
		}
		var dst *int64
		single := true
		switch key {
		case "intr":
			dst, single = &st.IntrTotal, false
		case "softirq":
			dst, single = &st.SoftIRQTotal, false
		case "ctxt":
			dst = &st.Ctxt
		case "btime":
			dst = &st.BootTime
		case "processes":
			dst = &st.Processes
		case "procs_running":
			dst = &st.ProcsRunning
		case "procs_blocked":
			dst = &st.ProcsBlocked
		}
		more = trimSpace(more)
		if dst != nil {
			if single && more != "" {
				return Stat{}, perr(statFile, line, "%s has more than one number", quote(key))
			}
			*dst = v
			continue
		}
		if more == "" {
			if st.Other == nil {
				st.Other = make(map[string]int64)
			}
			st.Other[key] = v
			continue
		}
		list := make([]int64, 1, 1+countFields(more))
		list[0] = v
		for {
			var f string
			f, more = nextField(more)
			if f == "" {
				break
			}
			n, ok := atoi(f)
			if !ok {
				return Stat{}, perr(statFile, line, "%s: %s is not a number", quote(key), quote(f))
			}
			list = append(list, n)
		}
		if st.OtherLists == nil {
			st.OtherLists = make(map[string][]int64)
		}
		st.OtherLists[key] = list
	}
	if !sawCPU {
		return Stat{}, perr(statFile, 0, "no cpu lines")
	}
	return st, nil
}

// cpuID recognises "cpu" (id -1) and "cpuN".
func cpuID(key string) (int, bool) {
	if !strings.HasPrefix(key, "cpu") {
		return 0, false
	}
	if key == "cpu" {
		return -1, true
	}
	id, ok := atou(key[3:])
	if !ok || id > 1<<30 {
		return 0, false
	}
	return int(id), true
}

// parseCPUTimes parses the 4 to 10 (or more) tick counters of a cpu line.
func parseCPUTimes(s string) (CPUTimes, bool) {
	var c CPUTimes
	dst := [...]*int64{&c.User, &c.Nice, &c.System, &c.Idle, &c.IOWait, &c.IRQ, &c.SoftIRQ, &c.Steal, &c.Guest, &c.GuestNice}
	n := 0
	for {
		var f string
		f, s = nextField(s)
		if f == "" {
			break
		}
		v, ok := atoi(f)
		if !ok {
			return CPUTimes{}, false
		}
		if n < len(dst) {
			*dst[n] = v
		}
		n++
	}
	return c, n >= 4
}
