package diagnose_test

// The watermark arithmetic reproduces the kernel on the reference snapshot
// of the development machine (6.18, x86_64; procfs/testdata/refsnap, copied
// from the project's kernel reference): every zone's min/low/high/promo and
// protection, and the reconstructed totalreserve_pages.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/vmcalc"
)

func TestKernelReferenceSnapshot(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "procfs", "testdata", "refsnap")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	zones, err := procfs.ParseZoneinfo(read("proc/zoneinfo"))
	if err != nil {
		t.Fatal(err)
	}
	mfk, err := strconv.ParseInt(strings.TrimSpace(string(read("proc/sys/vm/min_free_kbytes"))), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot's sysctls, as recorded with it: wsf 10, ratios 256 256 32 0 0.
	p := vmcalc.Params{MinFreeKbytes: mfk, WatermarkScaleFactor: 10, LowmemReserveRatio: []int64{256, 256, 32, 0, 0}, PageSize: 4096}
	vz := make([]vmcalc.Zone, len(zones))
	for i, z := range zones {
		vz[i] = vmcalc.Zone{Node: z.Node, Name: z.Name, Managed: z.Managed, Free: z.Free, Boost: max(z.Boost, 0)}
	}
	marks := vmcalc.Watermarks(vz, p)
	prot := vmcalc.Protection(vz, p.LowmemReserveRatio)
	for i, z := range zones {
		m := marks[i]
		b := vz[i].Boost
		got := []int64{m.Min + b, m.Low + b, m.High + b, m.Promo + b}
		want := []int64{z.Min, z.Low, z.High, z.Promo}
		if d := cmp.Diff(got, want); d != "" {
			t.Errorf("zone %s min/low/high/promo (-recomputed +kernel):\n%s", z.Name, d)
		}
		if d := cmp.Diff(prot[i], z.Protection); d != "" {
			t.Errorf("zone %s protection (-recomputed +kernel):\n%s", z.Name, d)
		}
	}
	// totalreserve_pages is exported nowhere; the kernel reference reconstructs it
	// from this zoneinfo as 32 063 pages.
	if got, want := vmcalc.TotalReserve(vz, marks, prot), int64(32063); got != want {
		t.Errorf("totalreserve = %d pages, want %d", got, want)
	}
}
