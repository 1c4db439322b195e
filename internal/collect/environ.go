package collect

import (
	"bytes"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// procEnv is all memdoctor takes from a process' initial environment
// (/proc/PID/environ), read once per collection whichever collectors ask:
// the first value of each variable, as getenv finds it. Nothing else of
// the environment is kept; the bytes read are cleared.
type procEnv struct {
	ok                 bool   // the file could be read
	preload            string // LD_PRELOAD
	stats              string // MEMDOCTOR_STATS
	statsSet           bool   // MEMDOCTOR_STATS is present
	profRate, profPath string // MEMDOCTOR_PROFILE, MEMDOCTOR_PROFILE_PATH
	arenaMax           int    // glibc's arena cap (procfs.ArenaMaxFromEnviron)
	arenaMaxSet        bool
}

// environ reads pid's initial environment once per collection.
func (c *ctx) environ(pid int) procEnv {
	if e, ok := c.envs[pid]; ok {
		return e
	}
	var e procEnv
	b, err := c.fs.ReadFile("proc/" + strconv.Itoa(pid) + "/environ")
	if err == nil {
		e = parseEnv(b)
		clear(b) // the rest of the environment is not kept
	}
	if c.envs == nil {
		c.envs = map[int]procEnv{}
	}
	c.envs[pid] = e
	return e
}

func parseEnv(b []byte) procEnv {
	e := procEnv{ok: true}
	var seenPreload, seenRate, seenPath bool
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("LD_PRELOAD=")); ok && !seenPreload {
			e.preload, seenPreload = string(v), true
		} else if v, ok := bytes.CutPrefix(kv, []byte("MEMDOCTOR_STATS=")); ok && !e.statsSet {
			e.stats, e.statsSet = string(v), true
		} else if v, ok := bytes.CutPrefix(kv, []byte(preload.ProfileVar+"=")); ok && !seenRate {
			e.profRate, seenRate = string(v), true
		} else if v, ok := bytes.CutPrefix(kv, []byte(preload.ProfilePathVar+"=")); ok && !seenPath {
			e.profPath, seenPath = string(v), true
		}
	}
	if n, _, ok, err := procfs.ArenaMaxFromEnviron(string(b)); err == nil && ok {
		e.arenaMax, e.arenaMaxSet = n, true
	}
	return e
}
