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

// StatsVar is the variable that asks the library for its stats file
// (README.md "Environment"): the one variable of another process' environment
// memdoctor needs to find that file.
const StatsVar = "MEMDOCTOR_STATS"

// StatsPathFromEnv is the stats file a process writes, from its initial
// environment (lookup returns a variable's first value, as getenv finds
// it) and the pid it sees as its own: MEMDOCTOR_STATS expanded as the
// library expands it (ExpandStatsPath). set is false when the variable is
// unset or empty; ok is false when the library writes no stats (unset, or
// a pattern it refuses). The path is as the process sees it: below its
// root, or relative to its working directory.
func StatsPathFromEnv(lookup func(name string) (string, bool), ownPID int) (path string, set, ok bool) {
	pattern, found := lookup(StatsVar)
	if !found || pattern == "" {
		return "", false, false
	}
	path, ok = ExpandStatsPath(pattern, ownPID)
	return path, true, ok
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
