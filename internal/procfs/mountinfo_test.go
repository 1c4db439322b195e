package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMountinfoHost(t *testing.T) {
	t.Parallel()
	mounts, err := hostFS().Mountinfo()
	if err != nil {
		t.Fatal(err)
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
	got, err := ParseMountinfo([]byte(in))
	if err != nil {
		t.Fatal(err)
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

func TestParseMountinfoErrors(t *testing.T) {
	t.Parallel()
	const ok = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
	for _, bad := range []string{
		"22 27 0:21 / /proc rw,relatime proc proc rw", // no separator
		"22 27 0:21 / /proc - proc proc rw",           // no options
		"x 27 0:21 / /proc rw - proc proc rw",
		"22 27 021 / /proc rw - proc proc rw",
		"22 27 0:21 / /proc rw - proc",
		"22 27 0:21 / /proc rw -  proc rw",
		"garbage",
	} {
		_, err := ParseMountinfo([]byte(ok + bad + "\n"))
		wantParseError(t, err, "proc/self/mountinfo", 2)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(readTestdata(f, "host/proc/self/mountinfo"))
	f.Add([]byte("36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mounts, err := ParseMountinfo(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, m := range mounts {
			if m.MountPoint == "" || m.FSType == "" || m.MountID < 0 || len(m.Options) == 0 || len(m.SuperOptions) == 0 {
				t.Fatalf("impossible mount %+v", m)
			}
		}
		again, _ := ParseMountinfo(data)
		if diff := cmp.Diff(mounts, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
	})
}
