package collect

func init() { register(60, "pressure", false, collectPressure) }

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
