package collect

import (
	"strings"
)

// meminfoName turns a /proc/meminfo key into node_exporter's series name:
// "Active(file)" → node_memory_Active_file_bytes; counts (HugePages_Total)
// get no unit suffix.
func meminfoName(key string, bytes bool) string {
	k := key
	if i := strings.IndexByte(k, '('); i >= 0 {
		k = k[:i] + "_" + strings.TrimSuffix(k[i+1:], ")")
	}
	if bytes {
		return "node_memory_" + k + "_bytes"
	}
	return "node_memory_" + k
}

// isCount says which meminfo keys are counts rather than kB.
func isCount(key string) bool { return strings.HasPrefix(key, "HugePages_") }

func init() { register(10, "meminfo", true, collectMeminfo) }

func collectMeminfo(c *ctx) error {
	kv, err := c.fs.Meminfo()
	if err != nil {
		return err
	}
	for _, k := range kv.Keys {
		v, ok := kv.Num[k]
		if !ok {
			continue
		}
		c.add(meminfoName(k, !isCount(k)), float64(v))
	}
	return nil
}
