package prom

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// rangeAnswer is a range query's answer as a fleet scan's fetch gets it:
// eight hosts' nine node_exporter series over 14 days at 1,500 points,
// gauges that wander and counters that climb, as Prometheus and
// VictoriaMetrics write them.
func rangeAnswer() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for h := range 8 {
		for s, name := range []string{"node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes", "node_memory_SUnreclaim_bytes",
			"node_cgroups_cgroups", "node_boot_time_seconds", "node_vmstat_kswapd_low_wmark_hit_quickly", "node_vmstat_allocstall_normal",
			"node_vmstat_pgscan_direct", "node_uname_info"} {
			if h+s > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":{"__name__":%q,"instance":"host-%04d:9100","job":"node"},"values":[`, name, h)
			v := 3.4e10 * rng.Float64()
			for i := range 1500 {
				if i > 0 {
					b.WriteByte(',')
				}
				switch {
				case s == 1 || s == 2: // a gauge that wanders
					v += 4096 * float64(rng.IntN(20000)-10000)
				case s >= 5 && s <= 7: // a counter
					v = float64(int64(v) + int64(rng.IntN(100)))
				}
				fmt.Fprintf(&b, `[%d,"%d"]`, 1794003900+i*806, int64(v))
			}
			b.WriteString(`]}`)
		}
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

func gzipped(t testing.TB, doc []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(doc); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// A gzipped answer reads as the same points as the plain one through the
// client, with the bytes on the wire and decoded counted, and a corrupt
// one is refused.
func TestGzipAnswer(t *testing.T) {
	doc := rangeAnswer()
	z := gzipped(t, doc)
	bad := append([]byte(nil), z...)
	for i := len(bad) / 2; i < len(bad)/2+64; i++ {
		bad[i] ^= 0x5a
	}
	from := time.Unix(1794003900, 0)
	to := from.Add(1499 * 806 * time.Second)
	read := func(body []byte, zipped bool) ([]Series, Stats, error) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if zipped {
				w.Header().Set("Content-Encoding", "gzip")
			}
			_, _ = w.Write(body)
		}))
		defer srv.Close()
		c, err := New(Options{URL: srv.URL, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := c.QueryRange(t.Context(), "up", from, to, 806*time.Second)
		return ss, c.Stats(), err
	}
	plain, _, err := read(doc, false)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, st, err := read(z, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != 72 || len(unzipped) != len(plain) {
		t.Fatalf("%d series plain, %d gzipped; want 72 each", len(plain), len(unzipped))
	}
	for i := range plain {
		if !plain[i].Labels.Equal(unzipped[i].Labels) || len(plain[i].Points) != 1500 || !slices.Equal(plain[i].Points, unzipped[i].Points) {
			t.Fatalf("series %d: %v, %d points plain; %v, %d points gzipped", i, plain[i].Labels, len(plain[i].Points), unzipped[i].Labels, len(unzipped[i].Points))
		}
	}
	if st.WireBytes != int64(len(z)) || st.BodyBytes != int64(len(doc)) {
		t.Errorf("counted %d bytes on the wire and %d decoded, want %d and %d", st.WireBytes, st.BodyBytes, len(z), len(doc))
	}
	if _, _, err := read(bad, true); err == nil {
		t.Error("a corrupt gzip answer was read")
	}
}

// BenchmarkGunzipAnswer: inflating a fleet scan's range answer (2.9 MB
// of JSON, 72 series of 1,500 points), and inflating and decoding it, as
// the client reads an answer. klauspost/compress's reader (linked through
// parquet-go) was measured here too: 26 ms against 29 (medians of six
// runs on the shared 2-CPU machine), within the noise, and not taken.
func BenchmarkGunzipAnswer(b *testing.B) {
	doc := rangeAnswer()
	z := gzipped(b, doc)
	b.Run("gunzip", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			zr, err := gzip.NewReader(bytes.NewReader(z))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, zr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			zr, err := gzip.NewReader(bytes.NewReader(z))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := decodeAnswer(zr, 1500, "q"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
