package procfs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProcMaps(t *testing.T) {
	t.Parallel()
	maps, err := hostFS().ProcMaps(testPID)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 43 {
		t.Errorf("%d mappings, want 43", len(maps))
	}
	pick := func(path string) Mapping {
		for _, m := range maps {
			if m.Path == path {
				return m
			}
		}
		return Mapping{}
	}
	got := []Mapping{maps[0], maps[5], pick("[heap]"), pick("/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache"), maps[len(maps)-1]}
	want := []Mapping{
		{Start: 0x559aede6b000, End: 0x559aede9a000, Perms: "r--p", Dev: "fe:00", Inode: 246999, Path: "/usr/bin/bash"},
		{Start: 0x559aedfa0000, End: 0x559aedfab000, Perms: "rw-p", Dev: "00:00"},
		{Start: 0x559b285ec000, End: 0x559b28896000, Perms: "rw-p", Dev: "00:00", Path: "[heap]"},
		{Start: 0x7ff84ad36000, End: 0x7ff84ad3d000, Perms: "r--s", Dev: "fe:00", Inode: 325737, Path: "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache"},
		{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Dev: "00:00", Path: "[vsyscall]"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("mappings mismatch (-got +want):\n%s", diff)
	}
}

func TestParseMaps(t *testing.T) {
	t.Parallel()
	in := "7f0000000000-7f0000021000 rw-s 00001000 00:01 1234                       /memfd:arena (deleted)\n" +
		"7f0000021000-7f0000022000 r--p 00000000 103:02 99                         /data/my file.db\n" +
		"7f0000022000-7f0000023000 ---p 00000000 00:00 0 \n"
	got, err := ParseMaps([]byte(in), "proc/1/maps")
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x7f0000000000, End: 0x7f0000021000, Perms: "rw-s", Offset: 0x1000, Dev: "00:01", Inode: 1234, Path: "/memfd:arena (deleted)"},
		{Start: 0x7f0000021000, End: 0x7f0000022000, Perms: "r--p", Dev: "103:02", Inode: 99, Path: "/data/my file.db"},
		{Start: 0x7f0000022000, End: 0x7f0000023000, Perms: "---p", Dev: "00:00"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ParseMaps mismatch (-got +want):\n%s", diff)
	}
}

func TestParseMapsErrors(t *testing.T) {
	t.Parallel()
	const ok = "00400000-00401000 r--p 00000000 fe:00 1 /bin/x\n"
	for _, bad := range []string{
		"00400000 r--p 00000000 fe:00 1 /bin/x",          // no end address
		"00401000-00400000 r--p 00000000 fe:00 1 /bin/x", // end before start
		"0040000g-00401000 r--p 00000000 fe:00 1 /bin/x",
		"00400000-00401000 r--pp 00000000 fe:00 1 /bin/x",
		"00400000-00401000 r--p 0000000z fe:00 1 /bin/x",
		"00400000-00401000 r--p 00000000 fe00 1 /bin/x",
		"00400000-00401000 r--p 00000000 fe:00 -1 /bin/x",
		"00400000-00401000 r--p 00000000 fe:00",
		"10000000000000000-10000000000000001 r--p 00000000 fe:00 1",
	} {
		_, err := ParseMaps([]byte(ok+bad+"\n"), "proc/1/maps")
		wantParseError(t, err, "proc/1/maps", 2)
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add(readTestdata(f, "host/proc/7130/maps"))
	f.Add([]byte("7f0000000000-7f0000021000 rw-s 00001000 00:01 1234   /memfd:arena (deleted)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		maps, err := ParseMaps(data, "proc/1/maps")
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, m := range maps {
			if m.Start > m.End || len(m.Perms) != 4 || !strings.Contains(m.Dev, ":") {
				t.Fatalf("impossible mapping %+v", m)
			}
		}
	})
}

func BenchmarkParseMaps(b *testing.B) {
	data := readTestdata(b, "host/proc/7130/maps")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseMaps(data, "proc/7130/maps"); err != nil {
			b.Fatal(err)
		}
	}
}
