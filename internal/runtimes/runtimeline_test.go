package runtimes

import (
	"bytes"
	"testing"
)

// runtimeLine keeps a page's line by its series' name, for a comment the
// third word as bytes.Fields splits it, Unicode spaces included, and
// allocates nothing: check runs it on every line of every page it scrapes.
func TestRuntimeLineWords(t *testing.T) {
	fields := func(line []byte) bool { // the definition: bytes.Fields's third word
		name := line
		if bytes.HasPrefix(line, []byte("#")) {
			f := bytes.Fields(line)
			if len(f) < 3 {
				return true
			}
			name = f[2]
		}
		for _, p := range runtimePrefixes {
			if bytes.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, l := range []string{
		"# HELP go_gc_duration_seconds A summary.\n", "# TYPE http_requests_total counter\n",
		"# HELP\tjvm_memory_used_bytes x\n", "#  TYPE   process_resident_memory_bytes gauge\n",
		"#HELP go_x y\n", "#HELP\n", "# EOF\n", "#\n", "# HELP\n", "# HELP \n", "# HELP  go_\n",
		"go_goroutines 12\n", "nginx_up 1\n", "", "#", "# HELP \u00a0go_x y\n", "# HELP\u00a0go_x y\n",
		"# HELP \u0085 go_x\n", "# HELP n\u00e9e_go go_x\n", "# HELP go_\u00e9 x\n", "# TYPE dotnet_gc_x\v\fgauge\r\n",
		"# HELP \xff\xfe go_x\n", "# UNIT python_gc_seconds seconds\n",
	} {
		if got, want := runtimeLine([]byte(l)), fields([]byte(l)); got != want {
			t.Errorf("runtimeLine(%q) = %v, want %v", l, got, want)
		}
	}
	line := []byte("# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration.\n")
	if n := testing.AllocsPerRun(100, func() { runtimeLine(line) }); n != 0 {
		t.Errorf("runtimeLine of a comment line: %.0f allocations, want none", n)
	}
}
