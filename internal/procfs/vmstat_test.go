package procfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVmstat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fs   FS
		want map[string]int64
	}{
		{"host", hostFS(), map[string]int64{
			"nr_free_pages": 1357802, "nr_free_pages_blocks": 1209344, "pgscan_kswapd": 0,
			"drop_pagecache": 1, "drop_slab": 2,
		}},
		{"refsnap", refFS(), map[string]int64{
			"nr_free_pages": 799515, "nr_inactive_file": 464887, "nr_active_file": 133593,
			"kswapd_low_wmark_hit_quickly": 0, "drop_pagecache": 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kv, err := tt.fs.Vmstat()
			if err != nil {
				t.Fatal(err)
			}
			checkKV(t, kv)
			if len(kv.Keys) != 192 || kv.Keys[0] != "nr_free_pages" {
				t.Errorf("%d keys starting %q, want 192 starting nr_free_pages", len(kv.Keys), kv.Keys[0])
			}
			got := make(map[string]int64, len(tt.want))
			for k := range tt.want {
				got[k] = kv.Num[k]
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Vmstat mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseVmstatErrors(t *testing.T) {
	t.Parallel()
	_, err := ParseVmstat([]byte("nr_free_pages 1\npgscan_kswapd\n"))
	wantParseError(t, err, "proc/vmstat", 2)
	_, err = ParseVmstat([]byte("nr_free_pages 1\npgscan_kswapd 0x10\n"))
	wantParseError(t, err, "proc/vmstat", 2)
}

func BenchmarkParseVmstat(b *testing.B) {
	data := readTestdata(b, "host/proc/vmstat")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseVmstat(data); err != nil {
			b.Fatal(err)
		}
	}
}
