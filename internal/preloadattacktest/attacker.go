// Package preloadattacktest starts hostile processes for tests of memdoctor's
// preload requests: an unprivileged process (uid 65534) that maps a file
// named like the preload library, sets MEMDOCTOR_STATS where it likes and
// answers requests as it likes. Only tests import it.
package preloadattacktest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memdoctor/memdoctor/preload"
)

// UID is the attacker's user and group (nobody, nogroup).
const UID = 65534

// Marker is in the secret file: an answer that gets it read shows it.
const Marker = "SECRET-of-root-7f3a"

// script plays the library's part of the protocol, badly on purpose.
// ATTACK: silent (never answers), claim (writes into the request file it
// was given, so that nobody removes it), answer (answers with EXTRA added
// to the line), fifo-xml (answers; PATH.malloc_info.xml is a FIFO),
// fifo-stats (answers, then replaces PATH with a FIFO).
const script = `S=$MEMDOCTOR_STATS
touch "$S" 2>/dev/null
if [ "$ATTACK" = fifo-xml ]; then rm -f "$S.malloc_info.xml"; mkfifo "$S.malloc_info.xml"; fi
if [ -n "$LINK" ]; then ln -sfn "$LINK" "$S.malloc_info.xml"; fi
echo ready
while :; do
  if [ -e "$S.request" ]; then
    case $ATTACK in
    silent) ;;
    claim) echo '* * * * * root id' 2>/dev/null > "$S.request" ;;
    *)
      read a id < "$S.request"
      printf '{"event":"info","pid":%s,"trigger":"request","request":"%s"%s}\n' $$ "$id" "$EXTRA" >> "$S"
      if [ "$ATTACK" = fifo-stats ]; then rm -f "$S"; mkfifo "$S"; fi
      rm -f "$S.request" ;;
    esac
  fi
  sleep 0.05
done
`

// secretXML is a valid malloc_info document: read, it would be reported.
const secretXML = `<malloc version="1">
<!-- ` + Marker + ` -->
<heap nr="0">
<sizes>
</sizes>
<total type="fast" count="0" size="0"/>
<total type="rest" count="1" size="777777"/>
<system type="current" size="999999"/>
<system type="max" size="999999"/>
<aspace type="total" size="999999"/>
<aspace type="mprotect" size="999999"/>
</heap>
<total type="fast" count="0" size="0"/>
<total type="rest" count="1" size="777777"/>
<total type="mmap" count="0" size="0"/>
<system type="current" size="999999"/>
<system type="max" size="999999"/>
<aspace type="total" size="999999"/>
<aspace type="mprotect" size="999999"/>
</malloc>
`

// Env is the attacker's world: Home is its own directory, Victim a
// directory of root (0755) it must not get anything into, Secret a file of
// root (0600) it must not get read.
type Env struct {
	Base, Home, Victim, Secret string
	lib, script                string
}

// New makes the directories, a library-named shared object (empty) and
// the secret. It skips the test without root or gcc.
func New(t *testing.T) *Env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attacker runs as uid 65534")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	base := t.TempDir()
	// The test's temporary directories are 0700: let the attacker in.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &Env{Base: base, Home: filepath.Join(base, "home"), Victim: filepath.Join(base, "victim"),
		Secret: filepath.Join(base, "secret.xml"), lib: filepath.Join(base, "lib", preload.LibName),
		script: filepath.Join(base, "lib", "attacker.sh")}
	for _, d := range []string{e.Home, e.Victim, filepath.Dir(e.lib)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(e.Home, UID, UID); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", e.lib, "-x", "c", "/dev/null").CombinedOutput(); err != nil {
		t.Fatalf("building an empty shared object: %v\n%s", err, out)
	}
	if err := os.Chmod(e.lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.script, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Secret, []byte(secretXML), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// Start runs the attacker as uid 65534 with MEMDOCTOR_STATS=stats, the
// given ATTACK mode and EXTRA answer fields (LINK=PATH in env: its
// PATH.malloc_info.xml is a symlink to PATH), and returns its pid once it
// runs. It is killed when the test ends.
func (e *Env) Start(t *testing.T, stats, mode, extra string, env ...string) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", e.script)
	cmd.Dir = e.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LD_PRELOAD=" + e.lib, "MEMDOCTOR_STATS=" + stats, "ATTACK=" + mode, "EXTRA=" + extra}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID}, Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the script and its sleep
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("attacker: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

// Entries lists dir (for "nothing was created here").
func Entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}
