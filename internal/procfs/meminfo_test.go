package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMeminfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fs   FS
		keys int
		want map[string]int64
	}{
		{"host", hostFS(), 54, map[string]int64{
			"MemTotal": 24684092 << 10, "MemFree": 24255708 << 10, "MemAvailable": 24291968 << 10,
			"SUnreclaim": 25784 << 10, "HugePages_Total": 0, "Hugepagesize": 2048 << 10, "DirectMap1G": 25165824 << 10,
		}},
		{"refsnap", refFS(), 54, map[string]int64{
			"MemTotal": 24684092 << 10, "MemFree": 21760416 << 10, "MemAvailable": 24123564 << 10,
			"KReclaimable": 266680 << 10, "SUnreclaim": 34840 << 10,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kv, err := tt.fs.Meminfo()
			if err != nil {
				t.Fatal(err)
			}
			checkKV(t, kv)
			if len(kv.Keys) != tt.keys || kv.Keys[0] != "MemTotal" {
				t.Errorf("%d keys starting %q, want %d starting MemTotal", len(kv.Keys), kv.Keys[0], tt.keys)
			}
			got := make(map[string]int64, len(tt.want))
			for k := range tt.want {
				got[k] = kv.Num[k]
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Meminfo mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseMeminfoErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"text value", "MemTotal:       24684092 kB\nMemFree:        lots\n", 2},
		{"truncated number", "MemTotal:       24684092 kB\nMemFree:        2176\x00", 2},
		{"no value", "MemTotal:       24684092 kB\n\nMemFree\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseMeminfo([]byte(tt.in))
			wantParseError(t, err, "proc/meminfo", tt.line)
		})
	}
}

func BenchmarkParseMeminfo(b *testing.B) {
	data := readTestdata(b, "host/proc/meminfo")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseMeminfo(data); err != nil {
			b.Fatal(err)
		}
	}
}
