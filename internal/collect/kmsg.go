package collect

import (
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// The log is read ahead, while the processes are read (its decision to
// read needs only vmstat, collected before them).
func init() { register(120, "kmsg", false, collectKmsg, prefetching(readKmsg)) }

// maxKmsgOOMReports is how many of the newest OOM-kill reports become
// series.
const maxKmsgOOMReports = 5

// collectKmsg reads the kernel log's OOM-kill reports (Options.KmsgPath):
// one memdoctor_kmsg_oom_kill_seconds per report (its time since boot) and
// its sizes in memdoctor_kmsg_oom_kill_bytes, labelled alike. The log is
// untrusted: the parser bounds every field and the text labels are
// stripped of control characters.
func collectKmsg(c *ctx) error {
	if c.kmsg == nil {
		readKmsg(c)
	}
	if c.kmsg.skipped {
		return nil
	}
	data, err := c.kmsg.data, c.kmsg.err
	c.kmsg = nil
	if err != nil && len(data) == 0 {
		c.note("dev/kmsg", "the kernel log is not readable: "+err.Error(),
			"the OOM killer's reports: which process was killed, its size, the cgroup and its limit",
			"run as root (CAP_SYSLOG), or set kernel.dmesg_restrict=0; `dmesg | grep -E 'oom-kill:|Killed process'` shows them too")
		return nil
	}
	reps := procfs.ParseOOMReports(data)
	if len(reps) > maxKmsgOOMReports {
		reps = reps[len(reps)-maxKmsgOOMReports:]
	}
	for _, r := range reps {
		if r.TimeUsec < 0 {
			continue
		}
		labels := []string{"task", printable(r.Task), "pid", strconv.Itoa(r.PID),
			"oom_memcg", printable(r.MemCG), "task_memcg", printable(r.TaskMemCG), "constraint", printable(r.Constraint),
			"boot_usec", strconv.FormatInt(r.TimeUsec, 10)}
		c.add("memdoctor_kmsg_oom_kill_seconds", float64(r.TimeUsec)/1e6, labels...)
		for _, s := range [...]struct {
			kind string
			kb   int64
		}{{"rss", r.RSSKB()}, {"anon_rss", r.AnonRSSKB}, {"total_vm", r.TotalVMKB}, {"limit", r.LimitKB}, {"usage", r.UsageKB}} {
			if s.kb >= 0 {
				c.add("memdoctor_kmsg_oom_kill_bytes", float64(s.kb)*1024, append(labels, "kind", s.kind)...)
			}
		}
	}
	return nil
}

// kmsgRead is the kernel log as readKmsg read it.
type kmsgRead struct {
	skipped bool // no OOM kill since boot: not read
	data    []byte
	err     error
}

// readKmsg reads the log's records an OOM report is read from into
// c.kmsg. With no OOM kill since boot (the kernel counts every one, a
// memory cgroup's too, in /proc/vmstat's oom_kill, read before this) the
// log holds no report, and its thousands of records, one read each, are
// not read.
func readKmsg(c *ctx) {
	c.kmsg = &kmsgRead{}
	if c.opt.KmsgPath == "" {
		c.kmsg.skipped = true
		return
	}
	if n, ok := c.res.Snapshot.Get("node_vmstat_oom_kill"); ok && n == 0 {
		c.kmsg.skipped = true
		return
	}
	c.kmsg.data, c.kmsg.err = procfs.ReadKmsg(c.opt.KmsgPath, procfs.MaxKmsgRecords, procfs.MaxKmsgBytes, procfs.OOMRecord)
}

// printable replaces control characters (a terminal's escapes) with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
