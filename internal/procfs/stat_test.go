package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatHost(t *testing.T) {
	t.Parallel()
	got, err := hostFS().Stat()
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{
		Total: CPUTimes{User: 6894, System: 3786, Idle: 59092, IOWait: 405, SoftIRQ: 101, Steal: 52},
		CPUs: []CPUTimes{
			{User: 2536, System: 1397, Idle: 31170, IOWait: 23, SoftIRQ: 12, Steal: 22},
			{User: 4357, System: 2389, Idle: 27921, IOWait: 381, SoftIRQ: 88, Steal: 30},
		},
		CPUIDs: []int{0, 1}, Ctxt: 571024, BootTime: 1795296016, Processes: 7166, ProcsRunning: 1,
		IntrTotal: 304596, SoftIRQTotal: 172431,
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Stat mismatch (-got +want):\n%s", diff)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want Stat
	}{
		{"2.6.18: 8 cpu columns, sparse cpus, 2.4-era page line",
			"cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\ncpu3 0 0 0 0 0 0 0 0\nintr 10 5 5\nctxt 9\nbtime 100\nprocesses 7\nprocs_running 2\nprocs_blocked 1\npage 5 6\nswap_cache 3\n",
			Stat{
				Total:  CPUTimes{User: 1, Nice: 2, System: 3, Idle: 4, IOWait: 5, IRQ: 6, SoftIRQ: 7, Steal: 8},
				CPUs:   []CPUTimes{{User: 1, Nice: 2, System: 3, Idle: 4, IOWait: 5, IRQ: 6, SoftIRQ: 7, Steal: 8}, {}},
				CPUIDs: []int{0, 3}, IntrTotal: 10, Ctxt: 9, BootTime: 100, Processes: 7, ProcsRunning: 2, ProcsBlocked: 1,
				Other:      map[string]int64{"swap_cache": 3},
				OtherLists: map[string][]int64{"page": {5, 6}},
			}},
		{"2.4: 4 cpu columns", "cpu 1 2 3 4\n", Stat{Total: CPUTimes{User: 1, Nice: 2, System: 3, Idle: 4}, CPUs: []CPUTimes{}, CPUIDs: []int{}}},
		{"future: 11 cpu columns", "cpu 1 2 3 4 5 6 7 8 9 10 11\n",
			Stat{Total: CPUTimes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, CPUs: []CPUTimes{}, CPUIDs: []int{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseStat([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ParseStat mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseStatErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"empty", "", 0},
		{"no cpu line", "ctxt 5\n", 0},
		{"3 cpu columns", "cpu 1 2 3\n", 1},
		{"bad cpu column", "cpu 1 2 3 x\n", 1},
		{"truncated ctxt", "cpu 1 2 3 4\nctxt\n", 2},
		{"two numbers on ctxt", "cpu 1 2 3 4\nctxt 1 2\n", 2},
		{"bad other list", "cpu 1 2 3 4\npage 1 x\n", 2},
		{"garbage", "cpu 1 2 3 4\nhello world\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseStat([]byte(tt.in))
			wantParseError(t, err, "proc/stat", tt.line)
		})
	}
}

func FuzzParseStat(f *testing.F) {
	addHostile(f, "proc/stat")
	f.Add(readTestdata(f, "host/proc/stat"))
	f.Add([]byte("cpu 1 2 3 4\ncpu7 1 2 3 4 5\npage 1 2\nfoo 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if len(st.CPUs) != len(st.CPUIDs) {
			t.Fatalf("%d cpus, %d ids", len(st.CPUs), len(st.CPUIDs))
		}
		for _, id := range st.CPUIDs {
			if id < 0 {
				t.Fatalf("negative cpu id %d", id)
			}
		}
		again, _ := ParseStat(data)
		if diff := cmp.Diff(st, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
	})
}

func BenchmarkParseStat(b *testing.B) {
	data := readTestdata(b, "host/proc/stat")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseStat(data); err != nil {
			b.Fatal(err)
		}
	}
}
