package collect

import (
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/preload"
)

// envVars are all memdoctor takes from a process' initial environment
// (procfs.ProcEnviron, with glibc's arena cap), read once per collection
// whichever collectors ask: the first value of each variable, as getenv
// finds it. Nothing else of the environment is kept.
var envVars = []string{"LD_PRELOAD", preload.StatsVar, preload.ProfileVar, preload.ProfilePathVar}

// environ reads pid's initial environment once per collection (empty when
// it cannot be read).
func (c *ctx) environ(pid int) procfs.Environ {
	if e, ok := c.envs[pid]; ok {
		return e
	}
	e, err := c.fs.ProcEnviron(pid, envVars...)
	if err != nil {
		e = procfs.Environ{}
	}
	if c.envs == nil {
		c.envs = map[int]procfs.Environ{}
	}
	c.envs[pid] = e
	return e
}
