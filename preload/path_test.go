package preload

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExpandStatsPathAgreesWithLibrary compiles the library's own
// md_expand_path (src/parse.c) and feeds both it and ExpandStatsPath the
// same patterns: every escape, every refusal and the length limits.
func TestExpandStatsPathAgreesWithLibrary(t *testing.T) {
	cc := needCC(t)
	dir := t.TempDir()
	main := filepath.Join(dir, "expand.c")
	const src = `#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "preload.h"
/* argv[1] pid, argv[2..] patterns: one line each, "ok PATH" or "refused" */
int main(int argc, char **argv) {
	long pid = atol(argv[1]);
	for (int i = 2; i < argc; i++) {
		char out[PATH_MAX];
		/* the constructor's own check before expanding */
		if (!*argv[i] || strlen(argv[i]) >= PATH_MAX || md_expand_path(argv[i], pid, out, sizeof out) < 0)
			puts("refused");
		else
			printf("ok %s\n", out);
	}
	return 0;
}
`
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "expand")
	if out, err := exec.Command(cc, "-O1", "-Isrc", "-o", bin, main, "src/parse.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	long := strings.Repeat("d/", 2046) // 4092 bytes
	patterns := []string{
		"/tmp/trim.%p.jsonl", "/tmp/trim.jsonl", "trim-%p", "%p", "%p%p", "/a/%%p/%p",
		"/a/100%%", "/a/%", "/a/%d", "/a/%P", "%%%p%%", "/a/% p", "/a/%%%",
		long + "x", long + "xxx", long + "xxxx", long + "%p", long[:4080] + "%p",
	}
	for _, pid := range []int{1, 7, 4242, 4194304} {
		args := append([]string{strconv.Itoa(pid)}, patterns...)
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != len(patterns) {
			t.Fatalf("pid %d: %d answers for %d patterns", pid, len(lines), len(patterns))
		}
		for i, p := range patterns {
			want := lines[i]
			got := "refused"
			if path, ok := ExpandStatsPath(p, pid); ok {
				got = "ok " + path
			}
			if got != want {
				t.Errorf("pid %d, %.40q (%d bytes): Go %.60q, library %.60q", pid, p, len(p), got, want)
			}
		}
	}
	if p, ok := ExpandStatsPath("/tmp/trim.%p.jsonl", 4242); !ok || p != "/tmp/trim.4242.jsonl" {
		t.Errorf("/tmp/trim.%%p.jsonl: %q %v", p, ok)
	}
}

func TestExpandStatsPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/tmp/stats.%p":     "/tmp/stats.42",
		"/var/%%p/s":        "/var/%p/s",
		"rel/%p-%p":         "rel/42-42",
		"/tmp/plain":        "/tmp/plain",
		"/tmp/bad%x":        "",
		"/tmp/trailing%":    "",
		"":                  "",
		"/a%%%p":            "/a%42",
		"/tmp/stats.%p.log": "/tmp/stats.42.log",
	} {
		got, ok := ExpandStatsPath(in, 42)
		if got != want || ok != (want != "") {
			t.Errorf("ExpandStatsPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// StatsPathFromEnv: unset and empty say "not set"; a pattern the library
// refuses is set but gives no file; the others expand with the process'
// own pid.
func TestStatsPathFromEnv(t *testing.T) {
	for _, c := range []struct {
		env          map[string]string
		path         string
		set, written bool
	}{
		{map[string]string{}, "", false, false},
		{map[string]string{StatsVar: ""}, "", false, false},
		{map[string]string{"OTHER": "/x"}, "", false, false},
		{map[string]string{StatsVar: "/run/s.%p"}, "/run/s.7", true, true},
		{map[string]string{StatsVar: "rel/%%%p"}, "rel/%7", true, true},
		{map[string]string{StatsVar: "/run/%d"}, "", true, false},
		{map[string]string{StatsVar: "/" + strings.Repeat("a", pathMax)}, "", true, false},
	} {
		lookup := func(name string) (string, bool) { v, ok := c.env[name]; return v, ok }
		path, set, ok := StatsPathFromEnv(lookup, 7)
		if path != c.path || set != c.set || ok != c.written {
			t.Errorf("%q: %q set %v ok %v, want %q %v %v", c.env, path, set, ok, c.path, c.set, c.written)
		}
	}
}
