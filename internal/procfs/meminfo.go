package procfs

// /proc/meminfo (fs/proc/meminfo.c, meminfo_proc_show), 2.6+:
//
//	MemTotal:       24684092 kB
//	MemFree:        21760416 kB
//	MemAvailable:   24123564 kB     (3.14+)
//	...
//	HugePages_Total:       0        (a count, no unit)
//	Hugepagesize:       2048 kB
//	DirectMap1G:     4194304 kB
//
// One "Key: value [kB]" per line; every value is a number. Keys come and go
// with kernel versions and config options, so all of them are kept.
//
// Every value is printed as unsigned, and the kernel clamps the ones that
// could go negative in transit (Cached, MemAvailable) at 0, so a negative
// value (or one that wraps to negative) is impossible here, unlike vmstat's
// per-CPU drift. Impossible values are errors naming the line: a wrong
// MemTotal or MemAvailable would be judged as truth by every rule.

import (
	"fmt"
	"strings"
)

// Meminfo reads proc/meminfo. kB values are bytes; HugePages_* are counts.
func (f FS) Meminfo() (KV, error) {
	return parseOnce(f, "proc/meminfo", func(data []byte) (KV, error) {
		return ParseMeminfo(data)
	})
}

// ParseMeminfo parses proc/meminfo. A value that is not a number is an
// error, and so is one that cannot be: a negative value, MemTotal missing
// or 0, MemFree or MemAvailable above MemTotal, SwapFree above SwapTotal.
func ParseMeminfo(data []byte) (KV, error) {
	const file = "proc/meminfo"
	kv, err := parseKV(string(data), file, kvOptions{numeric: true})
	if err != nil {
		return KV{}, err
	}
	for _, k := range kv.Keys {
		if v := kv.Num[k]; v < 0 {
			return KV{}, perr(file, keyLine(data, k), "%s is %s: a size cannot be negative (a value printed unsigned that wrapped, or a forged file)", k, kbString(v))
		}
	}
	total, ok := kv.Get("MemTotal")
	if !ok {
		return KV{}, perr(file, 0, "no MemTotal line (%d keys read): not a meminfo file, or cut short", len(kv.Keys))
	}
	if total == 0 {
		return KV{}, perr(file, keyLine(data, "MemTotal"), "MemTotal is 0")
	}
	for _, c := range []struct{ part, whole string }{
		{"MemFree", "MemTotal"}, {"MemAvailable", "MemTotal"}, {"SwapFree", "SwapTotal"},
	} {
		p, ok1 := kv.Get(c.part)
		w, ok2 := kv.Get(c.whole)
		if ok1 && ok2 && p > w {
			return KV{}, perr(file, keyLine(data, c.part), "%s %s is above %s %s", c.part, kbString(p), c.whole, kbString(w))
		}
	}
	return kv, nil
}

// kbString shows bytes as meminfo printed them.
func kbString(b int64) string { return fmt.Sprintf("%d kB", b/1024) }

// keyLine returns the 1-based line of the last line whose key is key (the
// last value wins), or 0.
func keyLine(data []byte, key string) int {
	found := 0
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimLeft(l, " \t")
		if rest, ok := strings.CutPrefix(l, key); ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "\t")) {
			found = i + 1
		}
	}
	return found
}
