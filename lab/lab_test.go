package lab_test

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/lab"
)

func TestMain(m *testing.M) { lab.Main(m) }

// TestGuestIsWhatTheLabPromises boots the guest once and checks what every
// scenario relies on: Debian's 6.1 kernel, cgroup v2 only with the memory
// controller, PSI on, the data disk mounted, the static programs running.
func TestGuestIsWhatTheLabPromises(t *testing.T) {
	l := lab.Open(t)
	res := l.Boot(t, lab.Run{Script: `
uname -r > $OUT/uname
cat /proc/mounts > $OUT/mounts
cat /sys/fs/cgroup/cgroup.subtree_control > $OUT/subtree
cat /proc/pressure/memory > $OUT/psi
memdoctor --version > $OUT/version
hog 4 > $OUT/hog & sleep 1; kill $!
echo ok > $OUT/ok
`})
	if res.Exit != 0 {
		t.Fatalf("scenario exit %d\n%s", res.Exit, res.Log)
	}
	if u := res.File(t, "uname"); !strings.HasPrefix(u, "6.1.") {
		t.Errorf("guest kernel %q, want 6.1.x", u)
	}
	mounts := res.File(t, "mounts")
	if !strings.Contains(mounts, " /sys/fs/cgroup cgroup2 ") {
		t.Errorf("cgroup2 not mounted at /sys/fs/cgroup:\n%s", mounts)
	}
	if strings.Contains(mounts, " cgroup ") {
		t.Errorf("a cgroup v1 hierarchy is mounted:\n%s", mounts)
	}
	if !strings.Contains(mounts, "/dev/vda /mnt ext4 ") {
		t.Errorf("data disk not mounted:\n%s", mounts)
	}
	if s := res.File(t, "subtree"); !strings.Contains(s, "memory") {
		t.Errorf("memory controller not delegated: %q", s)
	}
	if p := res.File(t, "psi"); !strings.HasPrefix(p, "some avg10=") {
		t.Errorf("PSI: %q", p)
	}
	if v := res.File(t, "version"); !strings.Contains(v, "memdoctor") {
		t.Errorf("memdoctor --version: %q", v)
	}
	if h := res.File(t, "hog"); !strings.Contains(h, "holding 4 MiB") {
		t.Errorf("static workload: %q", h)
	}
	if res.Boot <= 0 || res.Uptime <= 0 {
		t.Errorf("boot to first command not measured: %v / %v", res.Boot, res.Uptime)
	}
}
