package main

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Debian package, as an operator meets it: `make deb` builds it,
// apt-get installs it on this machine, its command, man pages, preload
// library and service command line work, and a purge leaves nothing
// behind. It installs and purges only the package it built, and skips when
// a memdoctor package, its settings or its recordings are already here.
func TestDebPackage(t *testing.T) {
	skipShort(t)
	requireLinuxRoot(t)
	// Mostly waits on dpkg and apt (its build is the only CPU it uses),
	// on a port and paths no other test uses.
	t.Parallel()
	for _, tool := range []string{"dpkg-deb", "apt-get", "dpkg-query", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the package test needs a Debian system (scripts/install-test-deps.sh)", tool)
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "memdoctor").Output(); err == nil && len(out) > 0 &&
		!strings.Contains(string(out), "not-installed") {
		t.Skipf("a memdoctor package is already on this machine (%s): not touching it", out)
	}
	for _, p := range []string{"/var/lib/memdoctor", "/etc/memdoctor"} {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("%s exists: a purge would remove it, and it is not this test's", p)
		}
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:9105"); err != nil {
		t.Skipf("127.0.0.1:9105, the service's default port, is taken: %v", err)
	} else {
		_ = ln.Close()
	}
	// Temporary files of lintian (whose check of the man pages left an
	// mldbm-elf-* file in /tmp at every run), dpkg, apt and man go in the
	// test's own directory.
	pkgTmp := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "MANPAGER=cat", "PAGER=cat", "MANWIDTH=100", "TMPDIR="+pkgTmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	dir := t.TempDir()
	start := time.Now()
	run("make", "-s", "-C", repoRoot(t), "deb", "DEBDIR="+dir)
	debs, _ := filepath.Glob(filepath.Join(dir, "memdoctor_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb made %v", debs)
	}
	st, err := os.Stat(debs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s (%.1f MiB) in %v", filepath.Base(debs[0]), float64(st.Size())/(1<<20), time.Since(start).Round(time.Second))
	version := strings.TrimSpace(run("dpkg-deb", "-f", debs[0], "Version"))
	// Debian's own checks: no error or warning that packaging/deb/lintian-overrides
	// does not justify.
	if _, err := exec.LookPath("lintian"); err != nil {
		t.Error("lintian not installed (scripts/install-test-deps.sh installs it)")
	} else {
		lint := exec.Command("lintian", "--fail-on", "error,warning", debs[0])
		lint.Env = append(os.Environ(), "TMPDIR="+pkgTmp)
		out, err := lint.CombinedOutput()
		if err != nil {
			t.Errorf("lintian: %v\n%s", err, out)
		}
	}

	start = time.Now()
	t.Cleanup(func() { // the package this test installed, whatever happened
		if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "memdoctor").Output(); err == nil &&
			!strings.Contains(string(out), "not-installed") {
			purge := exec.Command("dpkg", "--purge", "memdoctor")
			purge.Env = append(os.Environ(), "TMPDIR="+pkgTmp)
			_ = purge.Run()
		}
	})
	cmd := exec.Command("apt-get", "install", "-y", "-q", "--no-install-recommends", "./"+filepath.Base(debs[0]))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "TMPDIR="+pkgTmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apt-get install: %v\n%s", err, out)
	}
	installed := time.Since(start)

	// The command, stamped with the package's version.
	if v := run("/usr/bin/memdoctor", "--version"); !strings.HasPrefix(v, "memdoctor "+version+" (commit ") {
		t.Errorf("memdoctor --version: %q, want the package version %s", v, version)
	}
	if out := run("/usr/bin/memdoctor", "check"); !strings.Contains(out, "FINDINGS") && !strings.Contains(out, "memdoctor check:") {
		t.Errorf("memdoctor check printed no report:\n%s", out)
	}
	// A man page per command, generated from the commands themselves.
	if _, err := exec.LookPath("man"); err != nil {
		t.Error("man not installed (scripts/install-test-deps.sh installs man-db)")
	} else {
		page := run("man", "memdoctor-check")
		for _, want := range []string{"NAME", "memdoctor-check", "SYNOPSIS", "--fail-on"} {
			if !strings.Contains(page, want) {
				t.Errorf("man memdoctor-check lacks %q:\n%s", want, page)
			}
		}
	}
	files := strings.Fields(run("dpkg", "-L", "memdoctor"))
	root := newRoot(nil, nil)
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		if p := "/usr/share/man/man1/memdoctor-" + c.Name() + ".1.gz"; !slices.Contains(files, p) {
			t.Errorf("no man page for %q: %s not in the package", c.Name(), p)
		}
	}
	// Shell completion, as bash-completion loads it.
	if out := run("bash", "-c", ". /usr/share/bash-completion/completions/memdoctor && complete -p memdoctor"); !strings.Contains(out, "memdoctor") {
		t.Errorf("bash completion not registered: %s", out)
	}
	// zsh and fish completion, where those shells look for them, each
	// written for its shell (and parsed by it where it is installed).
	for _, c := range []struct{ path, marker, shell string }{
		{"/usr/share/zsh/vendor-completions/_memdoctor", "#compdef memdoctor", "zsh"},
		{"/usr/share/fish/vendor_completions.d/memdoctor.fish", "complete -c memdoctor", "fish"},
	} {
		if !slices.Contains(files, c.path) {
			t.Errorf("%s completion: %s not in the package", c.shell, c.path)
			continue
		}
		b, err := os.ReadFile(c.path)
		if err != nil || !strings.Contains(string(b), c.marker) {
			t.Errorf("%s completion %s lacks %q: %v", c.shell, c.path, c.marker, err)
		}
		if sh, err := exec.LookPath(c.shell); err == nil {
			if out, err := exec.Command(sh, "-n", c.path).CombinedOutput(); err != nil {
				t.Errorf("%s -n %s: %v\n%s", c.shell, c.path, err, out)
			}
		}
	}
	// Installed, not enabled: nothing under /etc/systemd links the unit.
	if links, _ := filepath.Glob("/etc/systemd/system/*/memdoctor-record.service"); len(links) > 0 {
		t.Errorf("the package enabled its unit: %v", links)
	}
	// The preload library built for the package, found without a compiler.
	lib := strings.TrimSpace(run("/usr/bin/memdoctor", "preload", "--print-path"))
	if lib != "/usr/lib/memdoctor/libmemdoctor_preload.so" {
		t.Errorf("memdoctor preload --print-path = %q, want the packaged library", lib)
	}
	stats := filepath.Join(dir, "trim.jsonl")
	pre := exec.Command("/bin/sh", "-c", "exit 0")
	pre.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMDOCTOR_STATS="+stats)
	if out, err := pre.CombinedOutput(); err != nil {
		t.Errorf("a program with the packaged library: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(stats); err != nil || !strings.Contains(string(b), `"event":"start"`) {
		t.Errorf("the packaged library wrote no start line: %v %s", err, b)
	}

	// The service, as systemd would start and stop it.
	unit := "/lib/systemd/system/memdoctor-record.service"
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(sa, "verify", unit).CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
	argv := execStart(t, unit, "/etc/memdoctor/record.conf")
	rec := exec.Command(argv[0], argv[1:]...)
	rec.Stderr = os.Stderr
	if err := rec.Start(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- rec.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	healthy := false
	for !healthy && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if resp, err := http.Get("http://127.0.0.1:9105/healthz"); err == nil {
			healthy = resp.StatusCode == http.StatusOK
			_ = resp.Body.Close()
		}
	}
	if !healthy {
		t.Errorf("%v: /healthz not ok within 30 s", argv)
	}
	if _, err := os.Stat("/var/lib/memdoctor/memdoctor.db"); err != nil {
		t.Errorf("the service's store: %v", err)
	}
	_ = rec.Process.Signal(syscall.SIGTERM) // systemctl stop
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the service after SIGTERM: %v (want a clean exit)", err)
		}
	case <-time.After(15 * time.Second):
		_ = rec.Process.Kill()
		t.Error("the service did not stop within 15 s of SIGTERM")
	}

	// Purge: every file and directory of the package gone, and the state.
	start = time.Now()
	run("apt-get", "purge", "-y", "-q", "memdoctor")
	purged := time.Since(start)
	for _, f := range append(files, "/var/lib/memdoctor", "/etc/memdoctor") {
		fi, err := os.Lstat(f)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			fi, err = os.Stat(f) // /lib -> usr/lib on a merged-/usr system
			if err != nil {
				continue
			}
		}
		if fi.IsDir() {
			if ents, _ := os.ReadDir(f); len(ents) > 0 {
				continue // shared with other packages (/usr/bin, ...)
			}
		}
		t.Errorf("left after purge: %s", f)
	}
	if out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", "memdoctor").Output(); len(out) > 0 && !strings.Contains(string(out), "not-installed") {
		t.Errorf("after purge dpkg says: %s", out)
	}
	t.Logf("apt-get install %v, purge %v", installed.Round(time.Millisecond), purged.Round(time.Millisecond))
}

// execStart returns the unit's ExecStart command line with its $VARIABLES
// expanded from the EnvironmentFile as systemd does: $VAR splits into words,
// ${VAR} stays one word, an unset variable is nothing.
func execStart(t *testing.T, unit, envFile string) []string {
	t.Helper()
	env := map[string]string{}
	if f, err := os.Open(envFile); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not KEY=VALUE: %q", envFile, line)
			}
			env[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
		_ = f.Close()
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			line = v
		}
	}
	if line == "" {
		t.Fatalf("%s has no ExecStart", unit)
	}
	var argv []string
	for _, w := range strings.Fields(line) {
		switch {
		case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
			argv = append(argv, env[w[2:len(w)-1]])
		case strings.HasPrefix(w, "$"):
			argv = append(argv, strings.Fields(env[w[1:]])...)
		default:
			argv = append(argv, w)
		}
	}
	return argv
}
