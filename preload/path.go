package preload

import (
	"strconv"
	"strings"
)

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

// The heap profile's variables (README.md "Heap profile") and the path the
// library writes to when MEMDOCTOR_PROFILE_PATH is unset.
const (
	ProfileVar         = "MEMDOCTOR_PROFILE"
	ProfilePathVar     = "MEMDOCTOR_PROFILE_PATH"
	DefaultProfilePath = "/tmp/memdoctor-heap.%p"
)

// ProfileOn reports whether a MEMDOCTOR_PROFILE value turns sampling on:
// set, and not "0" or "off" (a value the library cannot parse also leaves
// it off, and says so on the process' stderr).
func ProfileOn(v string) bool {
	return v != "" && v != "0" && !strings.EqualFold(v, "off")
}
