package collect

func init() { register(20, "vmstat", false, collectVmstat) }

func collectVmstat(c *ctx) error {
	kv, err := c.fs.Vmstat()
	if err != nil {
		return err
	}
	for _, k := range kv.Keys {
		if v, ok := kv.Num[k]; ok {
			c.add("node_vmstat_"+k, float64(v))
		}
	}
	return nil
}
