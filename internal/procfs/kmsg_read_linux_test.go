package procfs

import (
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A saved log (the lab's) reads whole, and the byte bound keeps the newest
// whole records.
func TestReadKmsgFileAndBounds(t *testing.T) {
	want, err := os.ReadFile("testdata/kmsg-oom-memcg-6.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadKmsg("testdata/kmsg-oom-memcg-6.1.txt", MaxKmsgRecords, MaxKmsgBytes, nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
	}
	small, err := ReadKmsg("testdata/kmsg-oom-memcg-6.1.txt", MaxKmsgRecords, 1000, nil)
	if err != nil || len(small) > 1000 || len(small) == 0 || !bytes.HasSuffix(want, small) {
		t.Fatalf("bounded read: %d bytes (%v)", len(small), err)
	}
	if i := bytes.Index(want, small); i > 0 && want[i-1] != '\n' {
		t.Errorf("bounded read starts inside a record")
	}
	if _, err := ReadKmsg("testdata/no-such-log", 10, 10, nil); !IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// The live /dev/kmsg: the read ends (it does not block for new records),
// starts at the ring's oldest record, and holds what dmesg shows last.
func TestReadKmsgLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading /dev/kmsg needs CAP_SYSLOG here")
	}
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Skip("no /dev/kmsg:", err)
	}
	start := time.Now()
	data, err := ReadKmsg("/dev/kmsg", MaxKmsgRecords, MaxKmsgBytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("read took %v", d)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], ";") {
		t.Fatalf("no records: %q", data)
	}
	ts, _ := kmsgText(lines[0])
	if ts < 0 {
		t.Fatalf("first record %q has no time", lines[0])
	}
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		t.Skip("no dmesg:", err)
	}
	dl := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	// The first record dmesg shows (the ring's oldest) is in the read.
	_, first := kmsgText(dl[0])
	if !strings.Contains(string(data), first) {
		t.Errorf("dmesg's first record %q is not in the read (read starts %q)", first, lines[0])
	}
	t.Logf("%d records, %d bytes, in %v", len(lines), len(data), time.Since(start))
}

// Keeping only the records OOMRecord chooses reads the same reports as
// the whole log: on the live log, and on a saved one whose lines are
// filtered the way the device's records are.
func TestReadKmsgKeepsWhatTheReportsNeed(t *testing.T) {
	saved, err := os.ReadFile("testdata/kmsg-oom-memcg-6.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for _, l := range strings.SplitAfter(string(saved), "\n") {
		if OOMRecord([]byte(l)) {
			kept = append(kept, l...)
		}
	}
	all, some := ParseOOMReports(saved), ParseOOMReports(kept)
	if len(all) == 0 {
		t.Fatal("the saved log has no OOM report")
	}
	if !reflect.DeepEqual(all, some) {
		t.Errorf("the saved log's records OOMRecord keeps read\n%+v\nthe whole log\n%+v", some, all)
	}
	if len(kept) >= len(saved)/2 {
		t.Errorf("OOMRecord kept %d of %d bytes", len(kept), len(saved))
	}

	if os.Geteuid() != 0 {
		t.Skip("reading /dev/kmsg needs CAP_SYSLOG here")
	}
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Skip("no /dev/kmsg:", err)
	}
	whole, err := ReadKmsg("/dev/kmsg", MaxKmsgRecords, MaxKmsgBytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	filtered, err := ReadKmsg("/dev/kmsg", MaxKmsgRecords, MaxKmsgBytes, OOMRecord)
	if err != nil {
		t.Fatal(err)
	}
	a, b := ParseOOMReports(whole), ParseOOMReports(filtered)
	// A kill logged between the two reads is in the second only.
	if len(b) > len(a) {
		b = b[:len(a)]
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the live log read whole gives %d reports, filtered %d:\n%+v\n%+v", len(a), len(b), a, b)
	}
	t.Logf("live log: %d bytes whole, %d kept; %d OOM reports", len(whole), len(filtered), len(a))
}

// The live log read whole, as check reads it (only OOM records kept).
func BenchmarkReadKmsg(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("reading /dev/kmsg needs CAP_SYSLOG here")
	}
	for b.Loop() {
		if _, err := ReadKmsg("/dev/kmsg", MaxKmsgRecords, MaxKmsgBytes, OOMRecord); err != nil {
			b.Fatal(err)
		}
	}
}
