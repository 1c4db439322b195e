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
//
// The kernel never zero-pads decimal numbers, so a value with a leading zero
// ("0022", "0000000000010000") is a hex or octal mask and kept as text.

import "strings"

// KV holds every key of a key-value file in file order.
type KV struct {
	// Keys lists every key in file order (a repeated key once, where it
	// first appeared; its last value wins).
	Keys []string
	// Num holds numeric values; "kB" values are in bytes.
	Num map[string]int64
	// Text holds values that are not a single integer, verbatim. A key is
	// in exactly one of Num and Text.
	Text map[string]string
}

// Get returns a numeric value.
func (kv KV) Get(key string) (int64, bool) {
	v, ok := kv.Num[key]
	return v, ok
}

// Value returns a numeric value, or 0 when absent.
func (kv KV) Value(key string) int64 { return kv.Num[key] }

// ParseKV parses a key-value file; file names it in errors. Values that are
// not numbers are kept in Text.
func ParseKV(data []byte, file string) (KV, error) {
	return parseKV(string(data), file, kvOptions{})
}

// kvOptions adapts parseKV to one file.
type kvOptions struct {
	// numeric rejects values that are not numbers (files whose every value
	// has always been a number: meminfo, vmstat, smaps_rollup).
	numeric bool
	// firstLine is the 1-based line number of the input's first line
	// (0 means 1), for inputs that had a header cut off.
	firstLine int
	// text reports keys whose value is always text even when it looks
	// like a decimal number (hex masks in status).
	text func(key string) bool
	// keep, when set, keeps only the keys it reports (every line is still
	// checked): a reader that needs few keys allocates for those only.
	keep func(key string) bool
}

func parseKV(s, file string, opt kvOptions) (KV, error) {
	n := lineHint(s, 4)
	if opt.keep != nil {
		n = 16
	}
	kv := KV{Num: make(map[string]int64, n), Keys: make([]string, 0, n)}
	err := eachKey(s, file, opt.firstLine, func(line int, key, val string) error {
		if opt.keep != nil && !opt.keep(key) {
			return nil
		}
		if v, ok := parseNumber(val); ok && (opt.text == nil || !opt.text(key)) {
			before := len(kv.Num)
			kv.Num[key] = v
			if len(kv.Num) > before {
				if _, wasText := kv.Text[key]; wasText {
					delete(kv.Text, key)
				} else {
					kv.Keys = append(kv.Keys, key)
				}
			}
			return nil
		}
		if opt.numeric {
			if num, unit := nextField(val); trimSpace(unit) == "kB" {
				if _, ok := atoi(num); ok {
					return perr(file, line, "value %s of %s overflows 64 bits in bytes", quote(val), quote(key))
				}
			}
			return perr(file, line, "value %s of %s is not a number", quote(val), quote(key))
		}
		if kv.Text == nil {
			kv.Text = make(map[string]string)
		}
		before := len(kv.Text)
		kv.Text[key] = val
		if len(kv.Text) > before {
			if _, wasNum := kv.Num[key]; wasNum {
				delete(kv.Num, key)
			} else {
				kv.Keys = append(kv.Keys, key)
			}
		}
		return nil
	})
	if err != nil {
		return KV{}, err
	}
	return kv, nil
}

// eachKey calls fn with the 1-based number, key and trimmed value of every
// non-blank line of s (its first line numbered first, 0 meaning 1); a
// line that is not a key and a value, or an error of fn, ends it with
// that error (a malformed line's names file and the line).
func eachKey(s, file string, first int, fn func(line int, key, val string) error) error {
	line := max(first-1, 0)
	for len(s) > 0 {
		var l string
		l, s = nextLine(s)
		line++
		l = trimSpace(l)
		if l == "" {
			continue
		}
		key, val, err := splitKey(l)
		if err != nil {
			return perr(file, line, "%v", err)
		}
		if err := fn(line, key, val); err != nil {
			return err
		}
	}
	return nil
}

type keyError string

// Error returns the reason.
func (e keyError) Error() string { return string(e) }

// splitKey splits a trimmed, non-empty line into key and trimmed value.
func splitKey(l string) (key, val string, err error) {
	tok, _ := nextField(l)
	if c := strings.IndexByte(tok, ':'); c >= 0 {
		// "Key:value" or "Key: value"; a colon inside the first token ends the key.
		if c == 0 {
			return "", "", keyError("empty key")
		}
		return tok[:c], trimSpace(l[c+1:]), nil
	}
	if len(tok) == len(l) {
		return "", "", keyError("key " + quote(l) + " has no value")
	}
	return tok, trimSpace(l[len(tok):]), nil
}

// parseNumber accepts "123", "-5", "123 kB". kB is scaled to bytes. Numbers
// with a leading zero are masks, not decimals.
func parseNumber(v string) (int64, bool) {
	num, unit := nextField(v)
	unit = trimSpace(unit)
	if num == "" || (unit != "" && unit != "kB") {
		return 0, false
	}
	if d := strings.TrimPrefix(num, "-"); len(d) > 1 && d[0] == '0' {
		return 0, false
	}
	n, ok := atoi(num)
	if !ok {
		return 0, false
	}
	if unit != "" {
		const lim = 1 << 53 // 2^63 / 1024
		if n >= lim || n < -lim {
			return 0, false
		}
		n *= 1024
	}
	return n, true
}
