package procfs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMountinfoHost(t *testing.T) {
	t.Parallel()
	mounts, skipped, err := hostFS().Mountinfo()
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	if len(mounts) != 19 {
		t.Errorf("%d mounts, want 19", len(mounts))
	}
	got := []Mount{mounts[5], mounts[len(mounts)-1]}
	want := []Mount{
		{MountID: 27, ParentID: 1, Dev: "254:0", Root: "/", MountPoint: "/", Options: []string{"rw", "relatime"},
			FSType: "ext4", Source: "/dev/vda", SuperOptions: []string{"rw", "discard", "resv_strict", "resuid=65534", "resgid=65534"}},
		{MountID: 41, ParentID: 31, Dev: "0:38", Root: "/", MountPoint: "/sys/fs/cgroup/unified", Options: []string{"rw", "relatime"},
			FSType: "cgroup2", Source: "cgroup2", SuperOptions: []string{"rw"}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("mounts mismatch (-got +want):\n%s", diff)
	}
}

func TestParseMountinfo(t *testing.T) {
	t.Parallel()
	in := "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue\n" +
		"40 25 0:45 / /mnt/my\\040dir rw - fuse.sshfs  rw,user_id=0\n" +
		"41 25 0:46 /a\\134b /x\\011y\\012z rw - tmpfs tmpfs rw\n"
	got, skipped, err := ParseMountinfo([]byte(in))
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	want := []Mount{
		{MountID: 36, ParentID: 35, Dev: "98:0", Root: "/mnt1", MountPoint: "/mnt2", Options: []string{"rw", "noatime"},
			Optional: []string{"master:1", "shared:2"}, FSType: "ext3", Source: "/dev/root", SuperOptions: []string{"rw", "errors=continue"}},
		{MountID: 40, ParentID: 25, Dev: "0:45", Root: "/", MountPoint: "/mnt/my dir", Options: []string{"rw"},
			FSType: "fuse.sshfs", Source: "", SuperOptions: []string{"rw", "user_id=0"}},
		{MountID: 41, ParentID: 25, Dev: "0:46", Root: "/a\\b", MountPoint: "/x\ty\nz", Options: []string{"rw"},
			FSType: "tmpfs", Source: "tmpfs", SuperOptions: []string{"rw"}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ParseMountinfo mismatch (-got +want):\n%s", diff)
	}
}

// A malformed line costs only itself: the others are returned, and the
// skipped one is named by file and line. A file of nothing but bad lines
// is an error.
func TestParseMountinfoErrors(t *testing.T) {
	t.Parallel()
	const ok = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
	for _, bad := range []string{
		"36 35 98:0 /  rw,noatime - ext4 /dev/root rw", // empty mount point (seen on real kernels)
		"22 27 0:21 / /proc rw,relatime proc proc rw",  // no separator
		"22 27 0:21 / /proc - proc proc rw",            // no options
		"x 27 0:21 / /proc rw - proc proc rw",
		"22 27 021 / /proc rw - proc proc rw",
		"22 27 0:21 / /proc rw - proc",
		"22 27 0:21 / /proc rw -  proc rw",
		"garbage",
	} {
		mounts, skipped, err := ParseMountinfo([]byte(ok + bad + "\n" + ok))
		if err != nil || len(mounts) != 2 || len(skipped) != 1 {
			t.Errorf("%q: %d mounts, skipped %v, err %v", bad, len(mounts), skipped, err)
			continue
		}
		wantParseError(t, skipped[0], "proc/self/mountinfo", 2)
		_, _, err = ParseMountinfo([]byte(bad + "\n"))
		wantParseError(t, err, "proc/self/mountinfo", 1)
	}
	if m, s, err := ParseMountinfo(nil); err != nil || len(m) != 0 || len(s) != 0 {
		t.Errorf("empty file: %v %v %v", m, s, err)
	}
}

// The real host capture with bad lines put at its start, middle and end:
// every good mount is still there, and each bad line is counted at its
// line number.
func TestParseMountinfoSkipsBadLinesInARealFile(t *testing.T) {
	t.Parallel()
	good := strings.SplitAfter(strings.TrimSuffix(string(readTestdata(t, "host/proc/self/mountinfo")), "\n"), "\n")
	want, _, err := ParseMountinfo([]byte(strings.Join(good, "")))
	if err != nil {
		t.Fatal(err)
	}
	bad := []string{"36 35 98:0 /  rw,noatime - ext4 /dev/root rw\n", "27 1 254:0 / / rw,rel\n", "\x00\x01 garbage\n"}
	mid := len(good) / 2
	var lines []string
	lines = append(lines, bad[0])
	lines = append(lines, good[:mid]...)
	lines = append(lines, bad[1])
	lines = append(lines, good[mid:]...)
	if !strings.HasSuffix(lines[len(lines)-1], "\n") {
		lines[len(lines)-1] += "\n"
	}
	lines = append(lines, bad[2])
	got, skipped, err := ParseMountinfo([]byte(strings.Join(lines, "")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("good mounts changed (-got +want):\n%s", diff)
	}
	wantLines := []int{1, mid + 2, len(lines)}
	if len(skipped) != 3 {
		t.Fatalf("skipped %v, want lines %v", skipped, wantLines)
	}
	for i, e := range skipped {
		wantParseError(t, e, "proc/self/mountinfo", wantLines[i])
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(readTestdata(f, "host/proc/self/mountinfo"))
	f.Add([]byte("36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mounts, skipped, err := ParseMountinfo(data)
		for _, e := range skipped {
			checkFuzzError(t, e)
		}
		if err != nil {
			checkFuzzError(t, err)
			if len(mounts) != 0 {
				t.Fatalf("an error with %d mounts", len(mounts))
			}
			return
		}
		nonEmpty := 0
		for _, l := range strings.Split(string(data), "\n") {
			if strings.TrimRight(l, "\r") != "" {
				nonEmpty++
			}
		}
		if len(mounts)+len(skipped) > nonEmpty {
			t.Fatalf("%d mounts + %d skipped from %d non-empty lines", len(mounts), len(skipped), nonEmpty)
		}
		for _, m := range mounts {
			if m.MountPoint == "" || m.FSType == "" || m.MountID < 0 || len(m.Options) == 0 || len(m.SuperOptions) == 0 {
				t.Fatalf("impossible mount %+v", m)
			}
		}
		again, _, _ := ParseMountinfo(data)
		if diff := cmp.Diff(mounts, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
	})
}
