package collect

import (
	"sort"
	"strconv"
	"strings"
)

func init() { register(40, "sysctl", false, collectSysctl) }

func collectSysctl(c *ctx) error {
	var vm map[string]string
	if c.opt.SysctlVM != nil {
		vm, _ = c.fs.SysctlVMNamed(c.opt.SysctlVM)
	} else {
		var err error
		if vm, _, err = c.fs.SysctlVM(); err != nil {
			return err
		}
	}
	// Unreadable ones are write-only knobs (drop_caches, compact_memory).
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
