package collect

import (
	"sort"
	"strconv"
	"strings"
)

// userHZ is the tick rate of /proc/stat (USER_HZ), 100 on every Linux ABI.
const userHZ = 100

func collectSysctl(c *ctx) error {
	vm, unreadable, err := c.fs.SysctlVM()
	if err != nil {
		return err
	}
	_ = unreadable // write-only knobs (drop_caches, compact_memory) are expected
	names := make([]string, 0, len(vm))
	for k := range vm {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		vals := strings.Fields(vm[k])
		if len(vals) == 0 {
			continue
		}
		name := "node_sysctl_vm_" + metricSafe(k) // page-cluster → page_cluster
		if len(vals) == 1 {
			if v, err := strconv.ParseFloat(vals[0], 64); err == nil {
				c.add(name, v)
			}
			continue
		}
		for i, s := range vals {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				c.add(name, v, "index", strconv.Itoa(i))
			}
		}
	}
	return nil
}

func collectStat(c *ctx) error {
	st, err := c.fs.Stat()
	if err != nil {
		return err
	}
	for i, t := range st.CPUs {
		cpu := strconv.Itoa(st.CPUIDs[i])
		modes := [...]struct {
			m string
			v int64
		}{
			{"user", t.User}, {"nice", t.Nice}, {"system", t.System}, {"idle", t.Idle},
			{"iowait", t.IOWait}, {"irq", t.IRQ}, {"softirq", t.SoftIRQ}, {"steal", t.Steal},
		}
		for _, m := range modes {
			c.add("node_cpu_seconds_total", float64(m.v)/userHZ, "cpu", cpu, "mode", m.m)
		}
	}
	c.add("node_context_switches_total", float64(st.Ctxt))
	c.add("node_intr_total", float64(st.IntrTotal))
	c.add("node_boot_time_seconds", float64(st.BootTime))
	c.add("node_forks_total", float64(st.Processes))
	c.add("node_procs_running", float64(st.ProcsRunning))
	c.add("node_procs_blocked", float64(st.ProcsBlocked))
	c.add("memdoctor_softirqs_total", float64(st.SoftIRQTotal))
	return nil
}

func collectPressure(c *ctx) error {
	p, err := c.fs.PressureMemory()
	if err != nil {
		c.note("proc/pressure/memory", "memory pressure (PSI) is not available: "+err.Error(),
			"stall time: how much work waited on memory",
			"boot with psi=1 (kernels built with CONFIG_PSI_DEFAULT_DISABLED) on 4.20+")
		return nil
	}
	c.add("node_pressure_memory_waiting_seconds_total", float64(p.Some.TotalMicros)/1e6)
	c.add("node_pressure_memory_stalled_seconds_total", float64(p.Full.TotalMicros)/1e6)
	for _, w := range [...]struct {
		kind string
		l    float64
		win  string
	}{
		{"some", p.Some.Avg10, "10s"}, {"some", p.Some.Avg60, "60s"}, {"some", p.Some.Avg300, "300s"},
		{"full", p.Full.Avg10, "10s"}, {"full", p.Full.Avg60, "60s"}, {"full", p.Full.Avg300, "300s"},
	} {
		c.add("memdoctor_pressure_memory_avg_ratio", w.l/100, "kind", w.kind, "window", w.win)
	}
	return nil
}

func readTrim(c *ctx, name string) string {
	b, err := c.fs.ReadFile(name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func collectUname(c *ctx) error {
	rel, err := c.fs.KernelRelease()
	if err != nil {
		return err
	}
	c.add("node_uname_info", 1,
		"sysname", orDefault(readTrim(c, "proc/sys/kernel/ostype"), "Linux"),
		"release", rel,
		"version", readTrim(c, "proc/sys/kernel/version"),
		"machine", readTrim(c, "proc/sys/kernel/arch"),
		"nodename", readTrim(c, "proc/sys/kernel/hostname"),
		"domainname", readTrim(c, "proc/sys/kernel/domainname"))
	c.add("memdoctor_page_size_bytes", float64(c.fs.PageSize))
	ver, banner, err := c.fs.GlibcVersion()
	if err != nil {
		c.note("libc.so.6", "glibc version unknown: "+err.Error(),
			"glibc-specific advice (arena limits, trim behaviour by version)", "")
		return nil
	}
	c.add("memdoctor_glibc_info", 1, "version", ver, "banner", banner)
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// metricSafe replaces every character a metric name cannot hold with '_'.
func metricSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}
