package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestProcStatus(t *testing.T) {
	t.Parallel()
	st, err := hostFS().ProcStatus(testPID)
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, st)
	if len(st.Keys) != 59 || st.Keys[0] != "Name" {
		t.Errorf("%d keys starting %q, want 59 starting Name", len(st.Keys), st.Keys[0])
	}
	gotNum := map[string]int64{}
	for _, k := range []string{"VmRSS", "RssAnon", "Threads", "Kthread", "THP_enabled", "Tgid"} {
		gotNum[k] = st.Num[k]
	}
	wantNum := map[string]int64{"VmRSS": 5596 << 10, "RssAnon": 2796 << 10, "Threads": 1, "Kthread": 0, "THP_enabled": 1, "Tgid": 7130}
	if diff := cmp.Diff(gotNum, wantNum); diff != "" {
		t.Errorf("numbers mismatch (-got +want):\n%s", diff)
	}
	gotText := map[string]string{}
	for _, k := range []string{"Name", "Umask", "State", "Uid", "Groups", "SigQ", "SigBlk", "CapEff", "Cpus_allowed", "untag_mask"} {
		gotText[k] = st.Text[k]
	}
	wantText := map[string]string{"Name": "bash", "Umask": "0022", "State": "S (sleeping)", "Uid": "0\t0\t0\t0", "Groups": "",
		"SigQ": "0/96365", "SigBlk": "0000000000010000", "CapEff": "000001fffeffffff", "Cpus_allowed": "3",
		"untag_mask": "0xffffffffffffffff"}
	if diff := cmp.Diff(gotText, wantText); diff != "" {
		t.Errorf("text mismatch (-got +want):\n%s", diff)
	}
}

func TestParseStatusTextKeys(t *testing.T) {
	t.Parallel()
	// A process named "1234" and one-digit masks must stay text.
	got, err := ParseStatus([]byte("Name:\t1234\nUmask:\t0\nSigPnd:\t1\nShdPnd:\t0\nCapBnd:\t5\nCpus_allowed:\t1\nMems_allowed:\t1\nSigQ:\t0/1\nVmRSS:\t1 kB\n"), "proc/1/status")
	if err != nil {
		t.Fatal(err)
	}
	want := KV{
		Keys: []string{"Name", "Umask", "SigPnd", "ShdPnd", "CapBnd", "Cpus_allowed", "Mems_allowed", "SigQ", "VmRSS"},
		Num:  map[string]int64{"VmRSS": 1024},
		Text: map[string]string{"Name": "1234", "Umask": "0", "SigPnd": "1", "ShdPnd": "0", "CapBnd": "5", "Cpus_allowed": "1",
			"Mems_allowed": "1", "SigQ": "0/1"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ParseStatus mismatch (-got +want):\n%s", diff)
	}
}

func TestProcStatm(t *testing.T) {
	t.Parallel()
	got, err := hostFS().ProcStatm(testPID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, Statm{Size: 1739, Resident: 1399, Shared: 700, Text: 193, Data: 758}); diff != "" {
		t.Errorf("ProcStatm mismatch (-got +want):\n%s", diff)
	}
}

func TestParseStatmErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "1 2 3 4 5 6\n", "1 2 3 4 5 6 7 8\n", "1 2 3 x 5 6 7\n", "1 2 3 -4 5 6 7\n"} {
		_, err := ParseStatm([]byte(in), "proc/1/statm")
		wantParseError(t, err, "proc/1/statm", 1)
	}
	got, err := ParseStatm([]byte("0 0 0 0 0 0 0\n"), "proc/2/statm") // a kernel thread
	if err != nil || got != (Statm{}) {
		t.Errorf("kernel thread statm = %+v, %v", got, err)
	}
}

func TestProcSmapsRollup(t *testing.T) {
	t.Parallel()
	kv, err := hostFS().ProcSmapsRollup(testPID)
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, kv)
	wantKeys := []string{"Rss", "Pss", "Pss_Dirty", "Pss_Anon", "Pss_File", "Pss_Shmem", "Shared_Clean", "Shared_Dirty",
		"Private_Clean", "Private_Dirty", "Referenced", "Anonymous", "KSM", "LazyFree", "AnonHugePages", "ShmemPmdMapped",
		"FilePmdMapped", "Shared_Hugetlb", "Private_Hugetlb", "Swap", "SwapPss", "Locked"}
	if diff := cmp.Diff(kv.Keys, wantKeys); diff != "" {
		t.Errorf("keys mismatch (-got +want):\n%s", diff)
	}
	got := [...]int64{kv.Value("Rss"), kv.Value("Pss"), kv.Value("Pss_File"), kv.Value("Private_Clean"), kv.Value("Private_Dirty")}
	want := [...]int64{5596 << 10, 3291 << 10, 495 << 10, 32 << 10, 2796 << 10}
	if got != want {
		t.Errorf("values %v, want %v", got, want)
	}
}

func TestParseSmapsRollup(t *testing.T) {
	t.Parallel()
	// Without the header line (some tools strip it) and empty.
	kv, err := ParseSmapsRollup([]byte("Rss:  4 kB\nPss:  2 kB\n"), "proc/1/smaps_rollup")
	if err != nil || kv.Value("Rss") != 4096 || kv.Value("Pss") != 2048 {
		t.Errorf("headerless: %+v, %v", kv, err)
	}
	kv, err = ParseSmapsRollup(nil, "proc/1/smaps_rollup")
	if err != nil || len(kv.Keys) != 0 {
		t.Errorf("empty: %+v, %v", kv, err)
	}
	// Line numbers count the header.
	_, err = ParseSmapsRollup([]byte("00400000-7fff0000 ---p 00000000 00:00 0  [rollup]\nRss: 4 kB\nPss: lots\n"), "proc/1/smaps_rollup")
	wantParseError(t, err, "proc/1/smaps_rollup", 3)
}

func TestProcCommCmdlinePIDs(t *testing.T) {
	t.Parallel()
	fsys := hostFS()
	comm, err := fsys.ProcComm(testPID)
	if err != nil || comm != "bash" {
		t.Errorf("ProcComm = %q, %v", comm, err)
	}
	args, err := fsys.ProcCmdline(testPID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(args, []string{"bash", "-c", `a=$(seq 1 200000); sleep 300; : "$a"`}); diff != "" {
		t.Errorf("ProcCmdline mismatch (-got +want):\n%s", diff)
	}
	pids, err := fsys.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pids, []int{testPID}); diff != "" {
		t.Errorf("PIDs mismatch (-got +want):\n%s", diff)
	}
}

func TestSplitCmdline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\x00", nil},
		{"a\x00", []string{"a"}},
		{"a\x00\x00b\x00", []string{"a", "", "b"}},
		{"nginx: worker process", []string{"nginx: worker process"}}, // rewritten argv, no NUL
	}
	for _, tt := range tests {
		if diff := cmp.Diff(splitCmdline(tt.in), tt.want, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("splitCmdline(%q) mismatch (-got +want):\n%s", tt.in, diff)
		}
	}
}

// errFS fails reading some names with a chosen error, as the kernel does
// for a process that exits or a write-only sysctl.
type errFS struct {
	fs.FS
	errs map[string]error
}

func (e errFS) Open(name string) (fs.File, error) {
	if err, ok := e.errs[name]; ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return e.FS.Open(name)
}

func TestVanishedProcess(t *testing.T) {
	t.Parallel()
	fsys := NewFSFrom(errFS{FS: fstest.MapFS{"proc/3/status": {Data: []byte("Name:\tx\n")}}, errs: map[string]error{
		"proc/2/smaps_rollup": syscall.ESRCH, // kernel thread, or exited while being read
		"proc/3/statm":        syscall.ESRCH,
	}}, 4096)
	_, err1 := fsys.ProcStatus(1) // gone before open: ENOENT
	_, err2 := fsys.ProcSmapsRollup(2)
	_, err3 := fsys.ProcStatm(3)
	_, err4 := fsys.ProcMaps(1)
	_, err5 := fsys.ProcCmdline(1)
	_, err6 := fsys.ProcComm(1)
	for i, err := range []error{err1, err2, err3, err4, err5, err6} {
		var pe *ParseError
		if !IsNotExist(err) || errors.As(err, &pe) {
			t.Errorf("error %d = %v: want a not-exist error that is no ParseError", i+1, err)
		}
	}
}

func BenchmarkParseStatus(b *testing.B) {
	data := readTestdata(b, "host/proc/7130/status")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseStatus(data, "proc/7130/status"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSmapsRollup(b *testing.B) {
	data := readTestdata(b, "host/proc/7130/smaps_rollup")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseSmapsRollup(data, "proc/7130/smaps_rollup"); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseStatm(f *testing.F) {
	f.Add(readTestdata(f, "host/proc/7130/statm"))
	f.Add([]byte("0 0 0 0 0 0 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseStatm(data, "proc/1/statm")
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if m.Size < 0 || m.Resident < 0 || m.Shared < 0 || m.Text < 0 || m.Lib < 0 || m.Data < 0 || m.Dirty < 0 {
			t.Fatalf("negative page count %+v", m)
		}
	})
}

// TestOwnPID: a process in its own pid namespace sees itself as pid 1
// (NSpid's last field); one in the host's namespace as its pid.
func TestOwnPID(t *testing.T) {
	t.Parallel()
	st, err := ParseStatus([]byte("Name:\tsleep\nPid:\t4242\nNSpid:\t4242\t17\t1\n"), "status")
	if err != nil {
		t.Fatal(err)
	}
	if got := OwnPID(st, 4242); got != 1 {
		t.Errorf("nested NSpid: %d, want 1", got)
	}
	if got := OwnPID(KV{}, 4242); got != 4242 {
		t.Errorf("no NSpid (kernel < 4.1): %d, want 4242", got)
	}
	self, err := NewFS("/").ProcStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got := OwnPID(self, os.Getpid()); got != os.Getpid() {
		t.Errorf("this process: %d, want %d", got, os.Getpid())
	}
	if os.Geteuid() != 0 {
		return
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// the forked sleep is the child of unshare
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("unshare started no child")
	}
	st, err = NewFS("/").ProcStatus(child)
	if err != nil {
		t.Fatal(err)
	}
	if got := OwnPID(st, child); got != 1 {
		t.Errorf("pid %d in its own pid namespace: OwnPID %d, want 1", child, got)
	}
}

func TestParseOOMScoreAdj(t *testing.T) {
	for in, want := range map[string]int{"0\n": 0, "-1000\n": -1000, "1000\n": 1000, "300": 300, "-17\n": -17} {
		if got, err := ParseOOMScoreAdj([]byte(in), "proc/1/oom_score_adj"); err != nil || got != want {
			t.Errorf("ParseOOMScoreAdj(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1001\n", "-1001\n", "x\n", "1 2\n"} {
		_, err := ParseOOMScoreAdj([]byte(bad), "proc/1/oom_score_adj")
		wantParseError(t, err, "proc/1/oom_score_adj", 1)
	}
	// This process' own, read as the collector does.
	if _, err := os.Stat("/proc/self/oom_score_adj"); err == nil {
		adj, err := NewFS("/").ProcOOMScoreAdj(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile("/proc/self/oom_score_adj")
		if strconv.Itoa(adj) != strings.TrimSpace(string(b)) {
			t.Errorf("ProcOOMScoreAdj = %d, the file says %q", adj, b)
		}
	}
}

func FuzzParseOOMScoreAdj(f *testing.F) {
	f.Add([]byte("0\n"))
	f.Add([]byte("-1000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseOOMScoreAdj(data, "oom_score_adj")
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if v < -1000 || v > 1000 {
			t.Fatalf("oom_score_adj %d", v)
		}
	})
}

// briefAsStatus is what a StatusBrief must hold, from the same file read
// whole into a KV: the kept keys, numbers as KV numbers, texts verbatim.
func briefAsStatus(t *testing.T, name string, data []byte) {
	t.Helper()
	kv, kerr := ParseStatus(data, name)
	st, err := ParseStatusBrief(data, name)
	if (err == nil) != (kerr == nil) {
		t.Fatalf("%s: brief error %v, whole error %v", name, err, kerr)
	}
	if err != nil {
		if err.Error() != kerr.Error() {
			t.Fatalf("%s: brief error %q, whole error %q", name, err, kerr)
		}
		return
	}
	for k, got := range map[string]string{"Name": st.Name, "Uid": st.UID, "Gid": st.GID, "Groups": st.Groups, "NSpid": st.NSpid} {
		if n, ok := kv.Num[k]; ok {
			// A one-value Groups or NSpid is a number to KV; the brief
			// keeps its text.
			if v, ok := parseNumber(got); !ok || v != n {
				t.Errorf("%s: %s %q, whole read %d", name, k, got, n)
			}
		} else if got != kv.Text[k] {
			t.Errorf("%s: %s %q, whole read %q", name, k, got, kv.Text[k])
		}
	}
	for k, got := range map[string]int64{"VmRSS": st.RSS, "RssAnon": st.Anon, "RssFile": st.File, "RssShmem": st.Shmem, "VmSwap": st.Swap, "Threads": st.Threads} {
		if want := kv.Value(k); got != want {
			t.Errorf("%s: %s %d, whole read %d", name, k, got, want)
		}
	}
	if _, ok := kv.Get("VmRSS"); ok != st.HasRSS {
		t.Errorf("%s: HasRSS %v, whole read has VmRSS %v", name, st.HasRSS, ok)
	}
	// (KV reads "NSpid: 1 kB" as 1024; the kernel writes no unit there.)
	if got, want := st.OwnPID(4242), OwnPID(kv, 4242); got != want && want > 0 && want <= 1<<31-1 && !strings.HasSuffix(st.NSpid, "kB") {
		t.Errorf("%s: OwnPID %d, whole read %d", name, got, want)
	}
}

// Every status file of this host and of the test data reads the same
// brief as whole.
func TestParseStatusBriefAsStatus(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("/proc/[0-9]*/status")
	more, _ := filepath.Glob("testdata/*/proc/[0-9]*/status")
	files = append(files, more...)
	read := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // exited since the glob
		}
		briefAsStatus(t, f, data)
		read++
	}
	if read < 10 {
		t.Fatalf("only %d status files read", read)
	}
	st, err := ParseStatusBrief([]byte("Name:\tsh\nUid:\t1000\t1000\t1000\t1000\nGroups:\t27 \nNSpid:\t77\t1\nVmRSS:\t  12 kB\nThreads:\t3\n"), "status")
	if err != nil {
		t.Fatal(err)
	}
	want := StatusBrief{Name: "sh", UID: "1000\t1000\t1000\t1000", Groups: "27", NSpid: "77\t1", RSS: 12 << 10, Threads: 3, HasRSS: true}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	if st.OwnPID(77) != 1 {
		t.Errorf("OwnPID %d, want 1", st.OwnPID(77))
	}
	if _, err := ParseStatusBrief([]byte("Name:\tsh\nbroken\n"), "status"); err == nil {
		t.Error("a line without a value was accepted")
	} else {
		wantParseError(t, err, "status", 2)
	}
}

func FuzzParseStatusBrief(f *testing.F) {
	addHostile(f, "proc/1/status")
	f.Add(readTestdata(f, "host/proc/7130/status"))
	f.Add([]byte("Name: a\nVmRSS: x\nVmRSS: 4 kB\nGroups: 5\nNSpid: 0\nThreads: 07\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		briefAsStatus(t, "fuzz", data)
	})
}

// BenchmarkParseStatusBrief is what check parses of each process' status
// (BenchmarkParseStatus: all of it, into maps).
func BenchmarkParseStatusBrief(b *testing.B) {
	data := readTestdata(b, "host/proc/7130/status")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseStatusBrief(data, "status"); err != nil {
			b.Fatal(err)
		}
	}
}
