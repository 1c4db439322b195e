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
		// Impossible values: each would be judged as truth by the rules.
		{"empty", "", 0},
		{"no MemTotal", "MemFree:        21760416 kB\nMemAvailable:   24123564 kB\n", 0},
		{"MemTotal 0", "MemTotal:              0 kB\nMemFree:              0 kB\n", 1},
		{"negative", "MemTotal:             -5 kB\n", 1},
		{"negative field", "MemTotal:       24684092 kB\nMemFree:        21760416 kB\nShmem:               -8 kB\n", 3},
		{"wraps to negative", "MemTotal:       24684092 kB\nMemFree:  18446744073709551615 kB\n", 2},
		{"overflows in bytes", "MemTotal:       9007199254740992 kB\n", 1},
		{"beyond 64 bits", "MemTotal:       18446744073709551616 kB\n", 1},
		{"available above total", "MemTotal:        8388608 kB\nMemFree:         1048576 kB\nMemAvailable:   16777216 kB\n", 3},
		{"free above total", "MemTotal:        8388608 kB\nMemFree:        16777216 kB\n", 2},
		{"swap free above total", "MemTotal:        8388608 kB\nSwapTotal:       1024 kB\nSwapFree:        2048 kB\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseMeminfo([]byte(tt.in))
			wantParseError(t, err, "proc/meminfo", tt.line)
		})
	}
}

// hostileMeminfo are the impossible meminfo files, as seeds for fuzzing.
var hostileMeminfo = []string{
	"", "MemTotal:              0 kB\n", "MemTotal:             -5 kB\n",
	"MemTotal:  18446744073709551615 kB\nMemAvailable: 1 kB\n", "MemTotal:       9007199254740992 kB\n",
	"MemTotal:        8388608 kB\nMemAvailable:   16777216 kB\n",
}

// FuzzParseMeminfo: a file ParseMeminfo accepts is one the rules can
// trust: MemTotal present and positive, nothing negative, nothing free
// beyond the total.
func FuzzParseMeminfo(f *testing.F) {
	f.Add(readTestdata(f, "host/proc/meminfo"))
	for _, s := range hostileMeminfo {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kv, err := ParseMeminfo(data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		total, ok := kv.Get("MemTotal")
		if !ok || total <= 0 {
			t.Fatalf("accepted MemTotal %d (present %v)", total, ok)
		}
		for k, v := range kv.Num {
			if v < 0 {
				t.Fatalf("accepted %s = %d", k, v)
			}
		}
		if a, ok := kv.Get("MemAvailable"); ok && a > total {
			t.Fatalf("accepted MemAvailable %d above MemTotal %d", a, total)
		}
	})
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
