package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseKV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want KV
	}{
		{
			name: "meminfo kB to bytes, counts stay",
			in:   "MemTotal:       24684092 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n",
			want: KV{Keys: []string{"MemTotal", "HugePages_Total", "Hugepagesize"},
				Num: map[string]int64{"MemTotal": 24684092 * 1024, "HugePages_Total": 0, "Hugepagesize": 2048 * 1024}},
		},
		{
			name: "vmstat blank-separated",
			in:   "nr_free_pages 797350\npgscan_kswapd 0",
			want: KV{Keys: []string{"nr_free_pages", "pgscan_kswapd"},
				Num: map[string]int64{"nr_free_pages": 797350, "pgscan_kswapd": 0}},
		},
		{
			name: "percpu drift printed with %lu reads back negative",
			in:   "nr_mlock 18446744073709551613\nnr_dirty -5\n",
			want: KV{Keys: []string{"nr_mlock", "nr_dirty"}, Num: map[string]int64{"nr_mlock": -3, "nr_dirty": -5}},
		},
		{
			name: "wrapped kB value",
			in:   "Committed_AS:   18446744073709551612 kB\n",
			want: KV{Keys: []string{"Committed_AS"}, Num: map[string]int64{"Committed_AS": -4 * 1024}},
		},
		{
			name: "text values verbatim, empty value",
			in:   "Name:\tbash\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\nGroups:\t \n",
			want: KV{Keys: []string{"Name", "State", "Uid", "Groups"}, Num: map[string]int64{},
				Text: map[string]string{"Name": "bash", "State": "S (sleeping)", "Uid": "0\t0\t0\t0", "Groups": ""}},
		},
		{
			name: "leading zeros are masks, not decimals",
			in:   "Umask:\t0022\nSigBlk:\t0000000000010000\nzero:\t0\n",
			want: KV{Keys: []string{"Umask", "SigBlk", "zero"}, Num: map[string]int64{"zero": 0},
				Text: map[string]string{"Umask": "0022", "SigBlk": "0000000000010000"}},
		},
		{
			name: "unit other than kB is text",
			in:   "a: 5 MB\nb: 5 kB x\n",
			want: KV{Keys: []string{"a", "b"}, Num: map[string]int64{}, Text: map[string]string{"a": "5 MB", "b": "5 kB x"}},
		},
		{
			name: "kB overflow is text",
			in:   "big: 9223372036854775807 kB\n",
			want: KV{Keys: []string{"big"}, Num: map[string]int64{}, Text: map[string]string{"big": "9223372036854775807 kB"}},
		},
		{
			name: "repeated key keeps first position, last value, one map",
			in:   "a 1\nb 2\na x\nb 3\na 4\n",
			want: KV{Keys: []string{"a", "b"}, Num: map[string]int64{"a": 4, "b": 3}, Text: map[string]string{}},
		},
		{
			name: "colon inside first token, CRLF, blank lines",
			in:   "\r\nkey:5\r\n\n  indented 7  \n",
			want: KV{Keys: []string{"key", "indented"}, Num: map[string]int64{"key": 5, "indented": 7}},
		},
		{
			name: "empty input",
			in:   "",
			want: KV{Num: map[string]int64{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKV([]byte(tt.in), "test")
			if err != nil {
				t.Fatal(err)
			}
			checkKV(t, got)
			if diff := cmp.Diff(got, tt.want, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseKV mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseKVErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"key without value", "a 1\ngarbage\n", 2},
		{"empty key", "a 1\n\n: 5\n", 3},
		{"truncated last line", "MemTotal:       24684092 kB\nMemFr", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseKV([]byte(tt.in), "proc/x")
			wantParseError(t, err, "proc/x", tt.line)
		})
	}
}

func TestCgroupKV(t *testing.T) {
	t.Parallel()
	fsys := hostFS()
	v1, err := fsys.CgroupKV("sys/fs/cgroup/memory/memory.stat")
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, v1)
	v2, err := fsys.CgroupKV("sys/fs/cgroup/unified/cgroup.stat")
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, v2)
	got := map[string]int64{
		"v1 keys":                 int64(len(v1.Keys)),
		"cache":                   v1.Value("cache"),
		"unevictable":             v1.Value("unevictable"),
		"hierarchical_mem_limit":  v1.Value("hierarchical_memory_limit"),
		"total_pgmajfault":        v1.Value("total_pgmajfault"),
		"v2 keys":                 int64(len(v2.Keys)),
		"nr_dying_descendants":    v2.Value("nr_dying_descendants"),
		"nr_subsys_hugetlb":       v2.Value("nr_subsys_hugetlb"),
		"nr_dying_subsys_hugetlb": v2.Value("nr_dying_subsys_hugetlb"),
	}
	want := map[string]int64{
		"v1 keys":                 42,
		"cache":                   10510336,
		"unevictable":             12832768,
		"hierarchical_mem_limit":  9223372036854771712,
		"total_pgmajfault":        1117,
		"v2 keys":                 6,
		"nr_dying_descendants":    0,
		"nr_subsys_hugetlb":       1,
		"nr_dying_subsys_hugetlb": 0,
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("cgroup files mismatch (-got +want):\n%s", diff)
	}
}

// A cgroup v2 memory.stat of a 6.x kernel (every key of
// Documentation/admin-guide/cgroup-v2.rst), in bytes and counts.
const v2MemoryStat = `anon 10485760
file 52428800
kernel 4194304
kernel_stack 131072
pagetables 262144
sec_pagetables 0
percpu 8192
sock 0
vmalloc 0
shmem 0
zswap 0
zswapped 0
file_mapped 1048576
file_dirty 4096
file_writeback 0
swapcached 0
anon_thp 0
file_thp 0
shmem_thp 0
inactive_anon 10485760
active_anon 0
inactive_file 41943040
active_file 10485760
unevictable 0
slab_reclaimable 2097152
slab_unreclaimable 1048576
slab 3145728
workingset_refault_anon 0
workingset_refault_file 12
workingset_activate_anon 0
workingset_activate_file 3
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pswpin 0
pswpout 0
pgscan 100
pgsteal 90
pgscan_kswapd 60
pgscan_direct 40
pgscan_khugepaged 0
pgscan_proactive 0
pgsteal_kswapd 55
pgsteal_direct 35
pgsteal_khugepaged 0
pgsteal_proactive 0
pgfault 123456
pgmajfault 7
pgrefill 0
pgactivate 10
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
swpin_zero 0
swpout_zero 0
zswpin 0
zswpout 0
zswpwb 0
thp_fault_alloc 0
thp_collapse_alloc 0
thp_swpout 0
thp_swpout_fallback 0
numa_pages_migrated 0
numa_pte_updates 0
numa_hint_faults 0
pgdemote_kswapd 0
pgdemote_direct 0
pgdemote_khugepaged 0
pgdemote_proactive 0
`

func TestCgroupV2MemoryStat(t *testing.T) {
	t.Parallel()
	kv, err := ParseKV([]byte(v2MemoryStat), "sys/fs/cgroup/a/memory.stat")
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, kv)
	if got, want := len(kv.Keys), 69; got != want {
		t.Errorf("%d keys, want %d", got, want)
	}
	if len(kv.Text) != 0 {
		t.Errorf("text values %v, want none", kv.Text)
	}
	got := [...]int64{kv.Value("anon"), kv.Value("file"), kv.Value("slab"), kv.Value("pgsteal_direct"), kv.Value("pgdemote_proactive")}
	want := [...]int64{10485760, 52428800, 3145728, 35, 0}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("values mismatch (-got +want):\n%s", diff)
	}
	if kv.Keys[0] != "anon" || kv.Keys[len(kv.Keys)-1] != "pgdemote_proactive" {
		t.Errorf("keys not in file order: first %q, last %q", kv.Keys[0], kv.Keys[len(kv.Keys)-1])
	}
}

func FuzzParseKV(f *testing.F) {
	addHostile(f, "proc/meminfo", "proc/vmstat", "proc/1/status")
	for _, name := range []string{
		"host/proc/meminfo", "host/proc/vmstat", "host/proc/7130/status", "host/proc/7130/smaps_rollup",
		"host/sys/fs/cgroup/memory/memory.stat", "host/sys/fs/cgroup/unified/cgroup.stat",
	} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(v2MemoryStat))
	f.Add([]byte("a: 18446744073709551615 kB\nb 0022\n: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kv, err := ParseKV(data, "fuzz")
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		checkKV(t, kv)
		again, _ := ParseKV(data, "fuzz")
		if diff := cmp.Diff(kv, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
		// Strict numeric parsing never succeeds on text values.
		if _, err := parseKV(string(data), "fuzz", kvOptions{numeric: true}); err == nil && len(kv.Text) != 0 {
			t.Fatalf("numeric parse accepted %d text values", len(kv.Text))
		}
	})
}
