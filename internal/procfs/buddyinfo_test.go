package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuddyinfoHost(t *testing.T) {
	t.Parallel()
	got, err := hostFS().Buddyinfo()
	if err != nil {
		t.Fatal(err)
	}
	want := []Buddy{
		{Zone: "DMA", Blocks: []int64{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 3}},
		{Zone: "DMA32", Blocks: []int64{1, 2, 4, 2, 5, 4, 3, 3, 4, 2, 752}},
		{Zone: "Normal", Blocks: []int64{8360, 5413, 2979, 1459, 566, 194, 287, 188, 179, 103, 373}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Buddyinfo mismatch (-got +want):\n%s", diff)
	}
}

func TestParseBuddyinfo(t *testing.T) {
	t.Parallel()
	// arm64 with 64 KiB pages: 14 orders; a second node.
	in := "Node 0, zone   Normal  1 2 3 4 5 6 7 8 9 10 11 12 13 14\nNode 1, zone   Normal  0 0 0 0 0 0 0 0 0 0 0 0 0 1\n"
	got, err := ParseBuddyinfo([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Buddy{
		{Zone: "Normal", Blocks: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
		{Node: 1, Zone: "Normal", Blocks: []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ParseBuddyinfo mismatch (-got +want):\n%s", diff)
	}
	for _, bad := range []string{"Node 0, zone DMA\n", "Node 0 zone DMA 1\n", "Node 0, zone DMA 1 x\n", "Node 0, zone DMA 1 -1\n", "garbage\n", "Node x, zone DMA 1\n"} {
		_, err := ParseBuddyinfo([]byte(bad))
		wantParseError(t, err, "proc/buddyinfo", 1)
	}
}

func FuzzParseBuddyinfo(f *testing.F) {
	addHostile(f, "proc/buddyinfo")
	f.Add(readTestdata(f, "host/proc/buddyinfo"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := ParseBuddyinfo(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, b := range bs {
			if len(b.Blocks) == 0 || b.Node < 0 || b.Zone == "" {
				t.Fatalf("impossible line %+v", b)
			}
			for _, n := range b.Blocks {
				if n < 0 {
					t.Fatalf("negative count in %+v", b)
				}
			}
		}
	})
}
