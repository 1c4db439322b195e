package procfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLocks(t *testing.T) {
	t.Parallel()
	in := "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF\n" +
		"1: -> FLOCK  ADVISORY  WRITE 1240 fd:01:5678 0 EOF\n" +
		"2: POSIX  ADVISORY  READ 5678 08:02:1234 128 128\n" +
		"3: OFDLCK ADVISORY  READ -1 00:05:1234 0 EOF\n" +
		"4: LEASE  ACTIVE    READ 0 <none>:0 0 EOF\n"
	got, err := ParseLocks([]byte(in), "proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	want := []Lock{
		{Class: "FLOCK", PID: 1234, Major: 0xfd, Minor: 1, Inode: 5678},
		{Class: "FLOCK", Blocked: true, PID: 1240, Major: 0xfd, Minor: 1, Inode: 5678},
		{Class: "POSIX", PID: 5678, Major: 8, Minor: 2, Inode: 1234},
		{Class: "OFDLCK", PID: -1, Major: 0, Minor: 5, Inode: 1234},
		{Class: "LEASE"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ParseLocks (-got +want):\n%s", diff)
	}
	for _, bad := range []string{"1: FLOCK ADVISORY WRITE", "1: FLOCK ADVISORY WRITE x fd:01:5678 0 EOF", "1: FLOCK ADVISORY WRITE 1 fd:01 0 EOF", "1: FLOCK ADVISORY WRITE 1 zz:01:5 0 EOF"} {
		if _, err := ParseLocks([]byte(bad), "proc/locks"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// The live file holds the flock this test takes, on its own file, by its
// own pid.
func TestLiveLocks(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	locks, err := Live().Locks()
	if err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	for _, l := range locks {
		if l.Inode == st.Ino && l.Major == major && l.Minor == minor {
			if l.Class != "FLOCK" || l.Blocked || l.PID != os.Getpid() {
				t.Errorf("our lock reads %+v, want a FLOCK held by pid %d", l, os.Getpid())
			}
			return
		}
	}
	t.Errorf("no lock on inode %d (%x:%x) among %d", st.Ino, major, minor, len(locks))
}

func TestLiveSelfFiles(t *testing.T) {
	t.Parallel()
	maps, err := Live().SelfMaps()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Stat(SelfExe)
	if err != nil {
		t.Fatal(err)
	}
	ino := exe.Sys().(*syscall.Stat_t).Ino
	found := false
	for _, m := range maps {
		found = found || m.Inode == ino && m.Perms[2] == 'x'
	}
	if !found {
		t.Errorf("no executable mapping of inode %d (%s) in %d mappings", ino, SelfExe, len(maps))
	}
	m, err := Live().SelfStatm()
	if err != nil || m.Resident <= 0 || m.Size < m.Resident {
		t.Errorf("SelfStatm: %+v, %v", m, err)
	}
	v, err := Live().Sysctl("kernel/pid_max")
	if err != nil || v == "" {
		t.Errorf("Sysctl(kernel/pid_max): %q, %v", v, err)
	}
	if _, err := Live().Sysctl("kernel/no_such_sysctl"); !IsNotExist(err) {
		t.Errorf("a sysctl that does not exist: %v", err)
	}
}

func FuzzParseLocks(f *testing.F) {
	f.Add([]byte("1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF\n1: -> FLOCK  ADVISORY  WRITE 1240 fd:01:5678 0 EOF\n"))
	f.Add([]byte("4: LEASE  ACTIVE    READ 0 <none>:0 0 EOF\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		locks, err := ParseLocks(data, "locks")
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		for _, l := range locks {
			if l.PID < -1 || l.Class == "" {
				t.Fatalf("%q parsed to %+v", data, l)
			}
		}
	})
}
