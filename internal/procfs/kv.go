package procfs

// The generic "key value [unit]" format shared by many kernel files:
//
//	/proc/meminfo          MemTotal:       24684092 kB      (2.6+)
//	/proc/vmstat           nr_free_pages 797350             (2.6+)
//	/proc/PID/status       VmRSS:	    3456 kB / Name:	bash
//	/proc/PID/smaps_rollup Pss_Anon:           1234 kB      (4.14+, header line skipped)
//	memory.stat, cgroup.stat, memory.events (cgroup v1 and v2)
//
// A key ends at ':' or at the first blank. A value that is one integer,
// optionally followed by "kB", is numeric; "kB" values are converted to bytes.
// Anything else (status' "State:	S (sleeping)", "Uid:	0 0 0 0") is kept as
// text. Values printed by the kernel with %lu that are really negative
// (transient per-CPU drift) wrap to huge numbers; they are read back as the
// negative int64 the kernel meant.

import (
	"bytes"
	"strconv"
)

// KV holds every key of a key-value file in file order.
type KV struct {
	// Keys lists every key in file order.
	Keys []string
	// Num holds numeric values; "kB" values are in bytes.
	Num map[string]int64
	// Text holds values that are not a single integer, verbatim.
	Text map[string]string
}

// Get returns a numeric value.
func (kv KV) Get(key string) (int64, bool) {
	v, ok := kv.Num[key]
	return v, ok
}

// Value returns a numeric value, or 0 when absent.
func (kv KV) Value(key string) int64 { return kv.Num[key] }

// ParseKV parses a key-value file; file names it in errors.
func ParseKV(data []byte, file string) (KV, error) {
	kv := KV{Num: make(map[string]int64, 64)}
	line := 0
	for len(data) > 0 {
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		line++
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		key, rest, err := splitKey(l)
		if err != nil {
			return KV{}, perr(file, line, "%v", err)
		}
		if _, dup := kv.Num[key]; !dup {
			if _, dupT := kv.Text[key]; !dupT {
				kv.Keys = append(kv.Keys, key)
			}
		}
		if n, ok := parseNumber(rest); ok {
			kv.Num[key] = n
			continue
		}
		if kv.Text == nil {
			kv.Text = make(map[string]string)
		}
		kv.Text[key] = string(rest)
	}
	return kv, nil
}

type keyError string

func (e keyError) Error() string { return string(e) }

func splitKey(l []byte) (string, []byte, error) {
	end := bytes.IndexAny(l, " \t")
	tok := l
	if end >= 0 {
		tok = l[:end]
	}
	if c := bytes.IndexByte(tok, ':'); c >= 0 {
		// "Key:value" or "Key: value"; a colon inside the first token ends the key.
		key := tok[:c]
		if len(key) == 0 {
			return "", nil, keyError("empty key")
		}
		return string(key), bytes.TrimSpace(l[c+1:]), nil
	}
	if end < 0 {
		return "", nil, keyError("key " + strconv.Quote(string(trunc(l))) + " has no value")
	}
	return string(tok), bytes.TrimSpace(l[end:]), nil
}

func trunc(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// parseNumber accepts "123", "-5", "123 kB". kB is scaled to bytes.
func parseNumber(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	mult := int64(1)
	if i := bytes.IndexAny(v, " \t"); i >= 0 {
		unit := bytes.TrimSpace(v[i:])
		if !bytes.Equal(unit, []byte("kB")) {
			return 0, false
		}
		v = v[:i]
		mult = 1024
	}
	n, ok := atoi(v)
	if !ok {
		return 0, false
	}
	return n * mult, true
}

// atoi parses a decimal integer without allocating. Unsigned values above
// MaxInt64 wrap to negative, which is what the kernel meant when it printed a
// negative counter with %lu.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}
