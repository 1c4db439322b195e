package procfs

// The kernel's OOM-kill reports, from /dev/kmsg records (printk's
// devkmsg_read: "prio,seq,usec,flags[,more];text", then dictionary lines
// that start with a space) or from plain dmesg lines ("[ 12.345678] text").
// The lines read (mm/oom_kill.c, mm/memcontrol.c, 6.1):
//
//	oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/oomtest,task_memcg=/oomtest,task=hog,pid=187,uid=0
//	Memory cgroup out of memory: Killed process 187 (hog) total-vm:67164kB, anon-rss:63488kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:172kB oom_score_adj:0
//	memory: usage 65536kB, limit 65536kB, failcnt 86
//
// A host-wide kill says "Out of memory: Killed process ..." and has
// constraint=CONSTRAINT_NONE and no oom_memcg. The "memory: usage" line
// comes before the oom-kill line of the same report and is taken as that
// report's limit. The log is untrusted text (any process with
// CAP_SYSLOG, and /dev/kmsg writers, put lines in it): every field is
// bounded, a malformed line is skipped, and no more than maxOOMReports
// reports are kept (the newest).

import (
	"bytes"
	"strconv"
	"strings"
)

// OOMReport is one OOM kill as the kernel logged it. Sizes are in kB;
// -1 means the line that carries it was not seen.
type OOMReport struct {
	TimeUsec   int64  // since boot, from the record (or the dmesg stamp)
	Constraint string // CONSTRAINT_MEMCG, CONSTRAINT_NONE, ...
	MemCG      string // oom_memcg: the cgroup whose limit was hit ("" host-wide)
	TaskMemCG  string // task_memcg: the victim's cgroup
	Task       string // the victim's comm
	PID        int
	UID        int
	TotalVMKB  int64
	AnonRSSKB  int64
	FileRSSKB  int64
	ShmemRSSKB int64
	LimitKB    int64 // memory: ... limit (the cgroup's memory.max), -1 unknown
	UsageKB    int64
}

// RSSKB is the victim's resident memory (anon + file + shmem), -1 unknown.
func (r OOMReport) RSSKB() int64 {
	if r.AnonRSSKB < 0 {
		return -1
	}
	return r.AnonRSSKB + max(r.FileRSSKB, 0) + max(r.ShmemRSSKB, 0)
}

const (
	maxOOMReports  = 64
	maxKmsgLine    = 4096
	maxOOMFieldLen = 256
)

// ParseOOMReports reads the OOM-kill reports in a /dev/kmsg or dmesg dump,
// oldest first.
func ParseOOMReports(data []byte) []OOMReport {
	var out []OOMReport
	var cur *OOMReport
	usage, limit := int64(-1), int64(-1)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 || line[0] == ' ' || len(line) > maxKmsgLine {
			continue // dictionary line, or too long to be the kernel's
		}
		// Most of a log is other lines: only those OOMRecord keeps are
		// made strings and split.
		if !OOMRecord(line) {
			continue
		}
		ts, text := kmsgText(string(line))
		switch {
		case strings.HasPrefix(text, "memory: usage "):
			usage, limit = parseUsageLimit(text)
		case strings.HasPrefix(text, "oom-kill:"):
			r := OOMReport{TimeUsec: ts, PID: -1, UID: -1, TotalVMKB: -1, AnonRSSKB: -1, FileRSSKB: -1, ShmemRSSKB: -1,
				LimitKB: limit, UsageKB: usage}
			for _, kv := range strings.Split(text[len("oom-kill:"):], ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || len(v) > maxOOMFieldLen {
					continue
				}
				switch k {
				case "constraint":
					r.Constraint = v
				case "oom_memcg":
					r.MemCG = v
				case "task_memcg":
					r.TaskMemCG = v
				case "task":
					r.Task = v
				case "pid":
					r.PID = atoiOr(v, -1)
				case "uid":
					r.UID = atoiOr(v, -1)
				}
			}
			usage, limit = -1, -1
			out = append(out, r)
			cur = &out[len(out)-1]
		case cur != nil && strings.Contains(text, "Killed process "):
			parseKilled(cur, text)
			cur = nil
		}
	}
	if len(out) > maxOOMReports {
		out = out[len(out)-maxOOMReports:]
	}
	return out
}

// OOMRecord reports whether a kernel log record or line may be one that
// ParseOOMReports reads (an oom-kill line, a "Killed process" line or a
// cgroup's "memory: usage" line); ParseOOMReports skips every other.
//
// Its text starts where kmsgText finds it (after the header's ';', after a
// dmesg stamp's ']' and a blank, or at the start), so the two prefixes are
// looked for there only: the whole log passes through here, and looking
// for each anywhere in every record was two more scans of it.
func OOMRecord(rec []byte) bool {
	if oomPrefix(rec) {
		return true
	}
	if i := bytes.IndexByte(rec, ';'); i >= 0 && oomPrefix(rec[i+1:]) {
		return true
	}
	if len(rec) > 0 && rec[0] == '[' {
		if i := bytes.IndexByte(rec, ']'); i >= 0 {
			t := rec[i+1:]
			if oomPrefix(t) || len(t) > 0 && t[0] == ' ' && oomPrefix(t[1:]) {
				return true
			}
		}
	}
	return bytes.Contains(rec, []byte("Killed process "))
}

// oomPrefix reports whether text starts as ParseOOMReports' oom-kill or
// cgroup usage lines do.
func oomPrefix(text []byte) bool {
	return bytes.HasPrefix(text, []byte("oom-kill:")) || bytes.HasPrefix(text, []byte("memory: usage "))
}

// kmsgText splits a /dev/kmsg record or a dmesg line into its time (µs)
// and text.
func kmsgText(l string) (int64, string) {
	if h, text, ok := strings.Cut(l, ";"); ok {
		// "prio,seq,usec,flags[,more]": the third field, with a fourth.
		_, rest, ok1 := strings.Cut(h, ",")
		_, rest, ok2 := strings.Cut(rest, ",")
		usec, _, ok3 := strings.Cut(rest, ",")
		if ok1 && ok2 && ok3 {
			if ts, err := strconv.ParseInt(usec, 10, 64); err == nil && ts >= 0 {
				return ts, text
			}
		}
	}
	if strings.HasPrefix(l, "[") {
		if stamp, text, ok := strings.Cut(l[1:], "]"); ok {
			if sec, err := strconv.ParseFloat(strings.TrimSpace(stamp), 64); err == nil && sec >= 0 && sec < 1e12 {
				return int64(sec * 1e6), strings.TrimPrefix(text, " ")
			}
		}
	}
	return -1, l
}

// parseUsageLimit reads "memory: usage 65536kB, limit 65536kB, failcnt 86".
func parseUsageLimit(text string) (usage, limit int64) {
	usage, limit = -1, -1
	for _, part := range strings.Split(strings.TrimPrefix(text, "memory: "), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), " ")
		if !ok {
			continue
		}
		switch k {
		case "usage":
			usage = kb(v)
		case "limit":
			limit = kb(v)
		}
	}
	return usage, limit
}

// parseKilled reads "... Killed process 187 (hog) total-vm:67164kB,
// anon-rss:63488kB, file-rss:0kB, shmem-rss:0kB, UID:0 ...". The comm in
// parentheses may itself hold spaces and parentheses: the fields are read
// after the last ") ".
func parseKilled(r *OOMReport, text string) {
	_, rest, _ := strings.Cut(text, "Killed process ")
	pid, rest, _ := strings.Cut(rest, " ")
	if r.PID < 0 {
		r.PID = atoiOr(pid, -1)
	}
	if i := strings.LastIndex(rest, ") "); i >= 0 {
		if r.Task == "" && strings.HasPrefix(rest, "(") && i-1 <= maxOOMFieldLen {
			r.Task = rest[1:i]
		}
		rest = rest[i+2:]
	}
	for _, f := range strings.FieldsFunc(rest, func(c rune) bool { return c == ',' || c == ' ' }) {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		switch k {
		case "total-vm":
			r.TotalVMKB = kb(v)
		case "anon-rss":
			r.AnonRSSKB = kb(v)
		case "file-rss":
			r.FileRSSKB = kb(v)
		case "shmem-rss":
			r.ShmemRSSKB = kb(v)
		}
	}
}

// kb reads "63488kB"; -1 when it is not that.
func kb(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSuffix(v, "kB"), 10, 64)
	if err != nil || n < 0 || !strings.HasSuffix(v, "kB") {
		return -1
	}
	return n
}

func atoiOr(v string, d int) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return d
	}
	return n
}
