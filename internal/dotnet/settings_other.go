//go:build !linux

package dotnet

// ReadSettings needs Linux (a process' environment and root).
func ReadSettings(pid int, version string, env map[string]string) (Settings, []string) {
	return Settings{}, []string{"reading a process' settings needs Linux"}
}
