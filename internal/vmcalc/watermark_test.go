package vmcalc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reference snapshot of the development machine (6.18, x86_64, 4 KiB
// pages), from /proc/zoneinfo at 2026-11-21 20:32 UTC: managed pages per zone
// and the kernel's own min/low/high/promo and protection values.
func refZones() []Zone {
	return []Zone{
		{Node: 0, Name: "DMA", Managed: 3840},
		{Node: 0, Name: "DMA32", Managed: 772917},
		{Node: 0, Name: "Normal", Managed: 753664},
		{Node: 0, Name: "Movable", Managed: 0},
		{Node: 0, Name: "Device", Managed: 0},
	}
}

var refParams = Params{MinFreeKbytes: 67584, WatermarkScaleFactor: 10, LowmemReserveRatio: []int64{256, 256, 32, 0, 0}, PageSize: 4096}

func TestWatermarksReferenceSnapshot(t *testing.T) {
	t.Parallel()
	got := Watermarks(refZones(), refParams)
	want := []Marks{
		{42, 52, 62, 72},
		{8533, 10666, 12799, 14932},
		{8320, 10400, 12480, 14560},
		{32, 32, 32, 32},
		{0, 0, 0, 0},
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("watermarks (-got +want):\n%s", d)
	}
	gotProt := Protection(refZones(), refParams.LowmemReserveRatio)
	wantProt := [][]int64{
		{0, 3019, 5963, 5963, 5963},
		{0, 0, 2944, 2944, 2944},
		{0, 0, 0, 0, 0},
		{0, 0, 0, 0, 0},
		{0, 0, 0, 0, 0},
	}
	if d := cmp.Diff(gotProt, wantProt); d != "" {
		t.Errorf("protection (-got +want):\n%s", d)
	}
	if got, want := TotalReserve(refZones(), got, gotProt), int64(32063); got != want {
		t.Errorf("totalreserve = %d, want %d", got, want)
	}
}

func TestWhatIfReferenceSnapshot(t *testing.T) {
	t.Parallel()
	zones := refZones()
	in := AvailableInput{FreePages: 797350, FilePages: 600160, ReclaimablePages: 66753}
	marks := Watermarks(zones, refParams)
	prot := Protection(zones, refParams.LowmemReserveRatio)
	if got, want := MemAvailable(zones, marks, prot, in), int64(1389900); got != want {
		t.Errorf("MemAvailable = %d pages, want %d", got, want)
	}
	w := Evaluate(zones, refParams, in, []int64{10, 200})
	if w[0].MemAvailableDeltaPages != 0 {
		t.Errorf("delta at the current setting = %d, want 0", w[0].MemAvailableDeltaPages)
	}
	want200 := []Marks{
		{42, 118, 194, 270},
		{8533, 23991, 39449, 54907},
		{8320, 23393, 38466, 53539},
		{32, 32, 32, 32},
		{0, 0, 0, 0},
	}
	if d := cmp.Diff(w[1].Marks, want200); d != "" {
		t.Errorf("wsf 200 (-got +want):\n%s", d)
	}
	if got, want := w[1].TotalReservePages, int64(84699); got != want {
		t.Errorf("wsf 200 totalreserve = %d, want %d", got, want)
	}
	// 364 984 kB less available = 91 246 pages.
	if got, want := w[1].MemAvailableDeltaPages, int64(-91246); got != want {
		t.Errorf("wsf 200 MemAvailable delta = %d pages, want %d", got, want)
	}
}

func TestScaleFactorThreshold(t *testing.T) {
	t.Parallel()
	got := ScaleFactorThreshold(refZones(), refParams)
	if got < 27.5 || got > 27.7 {
		t.Errorf("wsf* = %.2f, want ≈27.6", got)
	}
	eff := EffectiveFrom(refZones(), refParams)
	if eff != 28 {
		t.Errorf("EffectiveFrom = %d, want 28", eff)
	}
	// Just below: every gap is min/4; at the threshold at least one widens.
	below, at := refParams, refParams
	below.WatermarkScaleFactor, at.WatermarkScaleFactor = eff-1, eff
	base := Watermarks(refZones(), Params{MinFreeKbytes: 67584, WatermarkScaleFactor: 0, PageSize: 4096})
	if d := cmp.Diff(Watermarks(refZones(), below), base); d != "" {
		t.Errorf("wsf %d should change nothing:\n%s", eff-1, d)
	}
	if cmp.Equal(Watermarks(refZones(), at), base) {
		t.Errorf("wsf %d should widen a gap", eff)
	}
}

// TestSeed002 reproduces the table of incident 3 (an 8 GB host whose Normal
// zone had a 10 MB kswapd window). The write-up printed only min/low/high, so
// the managed pages below are ones the table implies: with
// min_free_kbytes 67584 (the THP rule for DMA+DMA32+Normal) every zone's min
// is its share of 16896 pages, and at wsf 200 the gap is
// mult_frac(managed, 200, 10000), which pins Normal to 1 270 300..1 270 349
// and DMA32 to 765 900..765 949 pages. The two states differ slightly
// (DMA32 min 6322 vs 6342): the machine's managed pages moved between them.
func TestSeed002(t *testing.T) {
	t.Parallel()
	p := Params{MinFreeKbytes: 67584, PageSize: 4096}
	cases := []struct {
		wsf             int64
		dma32, normal   int64
		wantD32, wantNo Marks
	}{
		{10, 759675, 1266348, Marks{6322, 7902, 9482, 11062}, Marks{10540, 13175, 15810, 18445}},
		{200, 765900, 1270300, Marks{6342, 21660, 36978, 52296}, Marks{10520, 35926, 61332, 86738}},
	}
	for _, c := range cases {
		q := p
		q.WatermarkScaleFactor = c.wsf
		zones := []Zone{{Name: "DMA", Managed: 3977}, {Name: "DMA32", Managed: c.dma32}, {Name: "Normal", Managed: c.normal}, {Name: "Movable"}, {Name: "Device"}}
		got := Watermarks(zones, q)
		if d := cmp.Diff(got[1], c.wantD32); d != "" {
			t.Errorf("wsf %d DMA32 (-got +want):\n%s", c.wsf, d)
		}
		if d := cmp.Diff(got[2], c.wantNo); d != "" {
			t.Errorf("wsf %d Normal (-got +want):\n%s", c.wsf, d)
		}
	}
	// The seed's point: at wsf 10 the Normal low-min gap is ~10 MB; at 200 ~99 MB.
	z := []Zone{{Name: "DMA", Managed: 3977}, {Name: "DMA32", Managed: 765900}, {Name: "Normal", Managed: 1270300}}
	w := Evaluate(z, Params{MinFreeKbytes: 67584, PageSize: 4096, WatermarkScaleFactor: 10}, AvailableInput{}, []int64{10, 200})
	if g := w[0].Marks[2].Gap() * 4096; g < 10<<20 || g > 11<<20 {
		t.Errorf("wsf 10 Normal gap = %d bytes, want ≈10 MiB", g)
	}
	if g := w[1].Marks[2].Gap() * 4096; g < 99_000_000 || g > 105_000_000 {
		t.Errorf("wsf 200 Normal gap = %d bytes, want ≈99 MB", g)
	}
}

func TestHighMemAndPageSize(t *testing.T) {
	t.Parallel()
	// HighMem gets a clamped min, but its gap still derives from the
	// proportional share tmp (5120 pages here, tmp/4 = 1280 > 500) exactly as
	// in the kernel; 64 KiB pages shift by 6.
	zones := []Zone{{Name: "Normal", Managed: 100000}, {Name: "HighMem", Managed: 500000}}
	got := Watermarks(zones, Params{MinFreeKbytes: 4096, WatermarkScaleFactor: 10, PageSize: 4096})
	if got[1].Min != 128 || got[1].Gap() != 1280 {
		t.Errorf("HighMem marks = %+v, want min 128 gap 1280", got[1])
	}
	if got[0].Min != 1024 {
		t.Errorf("Normal min = %d, want 1024 (all of pages_min)", got[0].Min)
	}
	if n := PagesMin(Params{MinFreeKbytes: 67584, PageSize: 65536}); n != 1056 {
		t.Errorf("PagesMin on 64 KiB pages = %d, want 1056", n)
	}
}

// Marks the kernel computed with D fewer managed pages in the largest
// lowmem zone (at boot) are recognised, and D found; marks from other
// settings are not explained.
func TestBootManagedDeficit(t *testing.T) {
	zones := []Zone{{Name: "DMA", Managed: 3840}, {Name: "DMA32", Managed: 241526}, {Name: "Normal"}, {Name: "Movable"}}
	p := Params{MinFreeKbytes: 45056, WatermarkScaleFactor: 10, PageSize: 4096, MovableIsLowmem: true}
	for _, d := range []int64{700, 9007, 30000} {
		boot := append([]Zone(nil), zones...)
		boot[1].Managed -= d
		kernel := Watermarks(boot, p)
		got := BootManagedDeficit(zones, p, kernel)
		// A run of D can give the same marks: any D in it explains them.
		boot[1].Managed = zones[1].Managed - got
		if got == 0 || Watermarks(boot, p)[1] != kernel[1] || Watermarks(boot, p)[0] != kernel[0] {
			t.Errorf("D %d: found %d", d, got)
		}
	}
	other := Watermarks(zones, Params{MinFreeKbytes: 90112, WatermarkScaleFactor: 10, PageSize: 4096, MovableIsLowmem: true})
	if got := BootManagedDeficit(zones, p, other); got != 0 {
		t.Errorf("twice min_free_kbytes explained as %d pages fewer at boot", got)
	}
	// 6.1 keeps the empty Movable zone at 0/0/0; later kernels cap it
	// like HighMem (32/32/32).
	if m := Watermarks(zones, p)[3]; m.Min != 0 || m.High != 0 {
		t.Errorf("6.1 Movable %+v", m)
	}
	p.MovableIsLowmem = false
	if m := Watermarks(zones, p)[3]; m.Min != 32 || m.High != 32 {
		t.Errorf("6.18 Movable %+v", m)
	}
	if !MovableIsLowmemOn(6, 1) || !MovableIsLowmemOn(6, 5) || MovableIsLowmemOn(6, 6) || MovableIsLowmemOn(6, 18) || !MovableIsLowmemOn(5, 15) {
		t.Error("MovableIsLowmemOn")
	}
}
