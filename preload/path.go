package preload

import "strconv"

// pathMax is the library's buffer for MEMDOCTOR_STATS and its expansion
// (PATH_MAX, terminating NUL included).
const pathMax = 4096

// ExpandStatsPath expands a MEMDOCTOR_STATS value as the library does
// (md_expand_path in src/parse.c): "%p" becomes pid, the process' pid as
// it sees it itself (getpid(), the last NSpid field in /proc/PID/status),
// "%%" becomes "%". ok is false when the library writes no stats for
// pattern: it is empty, holds another "%" sequence (a trailing "%"
// included), or it or its expansion does not fit PATH_MAX.
func ExpandStatsPath(pattern string, pid int) (path string, ok bool) {
	if pattern == "" || len(pattern) >= pathMax {
		return "", false
	}
	if pid < 0 {
		pid = 0 // the library prints a negative pid as 0
	}
	out := make([]byte, 0, len(pattern)+16)
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(pattern) {
			return "", false
		}
		i++
		switch pattern[i] {
		case '%':
			out = append(out, '%')
		case 'p':
			out = strconv.AppendInt(out, int64(pid), 10)
		default:
			return "", false
		}
	}
	if len(out) >= pathMax {
		return "", false
	}
	return string(out), true
}
