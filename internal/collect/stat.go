package collect

import (
	"strconv"
)

// userHZ is the tick rate of /proc/stat (USER_HZ), 100 on every Linux ABI.
const userHZ = 100

func init() { register(50, "stat", false, collectStat) }

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
