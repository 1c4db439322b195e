package cgroups

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// FuzzRead: one cgroup's files with any contents, v1 or v2, read without
// panicking; a working set is never negative and never above usage.
func FuzzRead(f *testing.F) {
	f.Add(false, []byte("209715200\n"), []byte("max\n"), []byte("anon 1\nfile 2\ninactive_file 3\n"), []byte("oom_kill 1\n"), []byte("some avg10=1.00 avg60=0 avg300=0 total=5\n"))
	f.Add(true, []byte("9223372036854771712\n"), []byte("9223372036854771712\n"), []byte("rss 1\ntotal_rss 5\ntotal_inactive_file 9999999999\n"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), []byte(""))
	f.Add(true, []byte("-5\n"), []byte("x"), []byte("total_\n\x00"), []byte("oom_kill -1"), []byte("\xff"))
	f.Fuzz(func(t *testing.T, v1 bool, usage, limit, stat, events, pressure []byte) {
		dir := t.TempDir()
		files := map[string][]byte{"memory.max": limit, "memory.stat": stat, "memory.events": events, "memory.pressure": pressure,
			"memory.current": usage, "memory.usage_in_bytes": usage, "memory.limit_in_bytes": limit, "memory.oom_control": events,
			"memory.failcnt": limit, "memory.memsw.usage_in_bytes": usage}
		if err := os.MkdirAll(filepath.Join(dir, "cg", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, "cg", "x", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := Reader{FS: procfs.NewFS(dir), Root: "cg", V1: v1}
		briefs, _, _ := r.Scan(10)
		for _, b := range Select(briefs, 1, 1) {
			m := r.ReadBrief(b)
			if ws := m.WorkingSet(); ws < 0 || (m.Usage >= 0 && ws > m.Usage) {
				t.Errorf("working set %d with usage %d", ws, m.Usage)
			}
			_ = Name(m.Path)
		}
	})
}

// FuzzRuntimeNames: the runtime state's parsers on any input never panic,
// and what they name is printable ASCII that round-trips to the input
// (a log name) or came from it (a config's name).
func FuzzRuntimeNames(f *testing.F) {
	f.Add("shop_cart-7d9f_"+podUID(1), "cart-7d9f_shop_app-"+hexID(1)+".log", []byte(dockerConfig("/web")),
		[]byte(`[{"id":"`+hexID(2)+`","names":["db"]}]`))
	f.Add("a_b_c", "x.log", []byte(`{"Name":"/\u001b[31mx"}`), []byte(`[{"id":1},{"id":"`+hexID(2)+`","names":["\u0007"]}]`))
	f.Add("ns_\x1b]0;t\x07_"+podUID(2), "p_n_c-"+hexID(3)+".log", []byte(`{"Config":{"Env":[{"a":[1,2,{"b":null}]}]},"Name":"/ok"}`), []byte(`[`))
	f.Fuzz(func(t *testing.T, podDir, ctrLog string, config, store []byte) {
		if ns, pod, uid, ok := ParsePodLogDir(podDir); ok {
			if ns+"_"+pod+"_"+uid != podDir || !printable(ns+pod+uid) {
				t.Errorf("ParsePodLogDir(%q) = %q %q %q", podDir, ns, pod, uid)
			}
		}
		if pod, ns, ctr, id, ok := ParseContainerLog(ctrLog); ok {
			if pod+"_"+ns+"_"+ctr+"-"+id+".log" != ctrLog || !printable(pod+ns+ctr) || !isHexID(id) {
				t.Errorf("ParseContainerLog(%q) = %q %q %q %q", ctrLog, pod, ns, ctr, id)
			}
		}
		if n := DockerConfigName(bytes.NewReader(config)); n != "" && (!printable(n) || !bytes.Contains(config, []byte(n))) {
			t.Errorf("DockerConfigName(%q) = %q", config, n)
		}
		for id, n := range PodmanNames(bytes.NewReader(store)) {
			if !isHexID(id) || !printable(n) {
				t.Errorf("PodmanNames(%q): %q = %q", store, id, n)
			}
		}
	})
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// FuzzParseProcCgroup: any proc/PID/cgroup parses without panicking into
// at most maxProcCgroupLines lines, each of which is in the input as
// "id:controllers:path".
func FuzzParseProcCgroup(f *testing.F) {
	f.Add([]byte("12:cpu,cpuacct:/user.slice\n4:memory:/a\n1:name=systemd:/a.service\n0::/a.service\n"))
	f.Add([]byte("0::/\n:::\n\n0:memory:/x:y\nno colon\n"))
	f.Add([]byte("\x00:\xff:\n1:,,:/\r\n"))
	// The definition: the file split into lines, each into three fields at
	// its first two colons.
	bySplit := func(data []byte) []ProcCgroup {
		var out []ProcCgroup
		for _, l := range strings.Split(string(data), "\n") {
			parts := strings.SplitN(l, ":", 3)
			if len(parts) != 3 {
				continue
			}
			if len(out) >= maxProcCgroupLines {
				break
			}
			c := ProcCgroup{ID: parts[0], Path: parts[2]}
			if parts[1] != "" {
				c.Controllers = strings.Split(parts[1], ",")
			}
			out = append(out, c)
		}
		return out
	}
	f.Add(bytes.Repeat([]byte("1:memory:/a\n"), maxProcCgroupLines+3))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := ParseProcCgroup(data)
		if want := bySplit(data); !reflect.DeepEqual(lines, want) {
			t.Fatalf("ParseProcCgroup(%q) = %+v, want %+v", data, lines, want)
		}
		if len(lines) > maxProcCgroupLines {
			t.Fatalf("%d lines kept", len(lines))
		}
		for _, l := range lines {
			s := l.ID + ":" + strings.Join(l.Controllers, ",") + ":" + l.Path
			if strings.Contains(l.ID, ":") || !bytes.Contains(data, []byte(s)) {
				t.Errorf("%+v is not a line of %q", l, data)
			}
			if l.Unified() && (l.ID != "0" || len(l.Controllers) != 0) {
				t.Errorf("%+v read as unified", l)
			}
		}
	})
}
