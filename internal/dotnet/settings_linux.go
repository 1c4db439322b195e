//go:build linux

package dotnet

import (
	"fmt"
	"path"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// ReadSettings reads the GC settings of process pid, a runtime of the
// given version: the variables of its environment (nothing else of it is
// kept; env, when not nil, is the runtime's own answer to
// ProcessEnvironment, read instead of the initial environment) and its
// runtimeconfig.json, found from its command line and
// opened inside its root (absolute paths) or its working directory
// (relative ones), following no symbolic link, at most 1 MiB. notes say
// what could not be read.
func ReadSettings(pid int, version string, env map[string]string) (Settings, []string) {
	var s Settings
	var notes []string
	fs := procfs.Live()
	if env != nil {
		s.FromEnv(env, MajorVersion(version))
	} else if env, err := fs.ProcEnviron(pid, EnvNames()...); err == nil {
		s.FromEnv(env.Vars, MajorVersion(version))
	} else {
		notes = append(notes, fmt.Sprintf("its environment: %v", err))
	}
	cmd, err := fs.ProcCmdline(pid)
	if err != nil {
		return s, append(notes, fmt.Sprintf("its command line: %v", err))
	}
	for _, p := range RuntimeConfigPaths(cmd) {
		root := procfs.PIDPath(pid, "root")
		if !strings.HasPrefix(p, "/") {
			root = procfs.PIDPath(pid, "cwd")
		}
		f, _, err := safeio.OpenInRoot(root, path.Clean(p), maxRuntimeConfig)
		if err != nil {
			continue // not there: the next place, or none
		}
		data, err := safeio.ReadAll(f, maxRuntimeConfig)
		_ = f.Close()
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", path.Base(p), err))
			break
		}
		if err := s.FromRuntimeConfig(data, path.Base(p)); err != nil {
			notes = append(notes, err.Error())
		}
		break
	}
	return s, notes
}
