package xor_test

import (
	"math/rand/v2"
	"testing"

	"github.com/memdoctor/memdoctor/internal/store/xor"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// The benchmarks encode and decode a 2 h chunk at 15 s (480 samples) of two
// kinds of series, with this package and with Prometheus' chunkenc for
// comparison; ns/sample is the figure to read.

func benchSeries(kind string) []pt {
	r := rand.New(rand.NewPCG(7, 8))
	ps := make([]pt, 480)
	t, v := int64(1700000000000), 1e9
	for i := range ps {
		switch kind {
		case "gauge": // page-aligned memory size, changing now and then
			if r.IntN(4) == 0 {
				v += float64((r.IntN(64) - 32) * 4096)
			}
		case "noisy": // a ratio with every bit changing, jittered times
			v = r.Float64()
			t += int64(r.IntN(20)) - 10
		}
		ps[i] = pt{t, v}
		t += 15000
	}
	return ps
}

func BenchmarkEncode(b *testing.B) {
	for _, kind := range []string{"gauge", "noisy"} {
		ps := benchSeries(kind)
		b.Run(kind+"/ours", func(b *testing.B) {
			for b.Loop() {
				c := xor.New()
				for _, p := range ps {
					c.Append(p.t, p.v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/sample")
		})
		b.Run(kind+"/chunkenc", func(b *testing.B) {
			for b.Loop() {
				c := chunkenc.NewXORChunk()
				app, _ := c.Appender()
				for _, p := range ps {
					app.Append(0, p.t, p.v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/sample")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, kind := range []string{"gauge", "noisy"} {
		ps := benchSeries(kind)
		c := xor.New()
		for _, p := range ps {
			c.Append(p.t, p.v)
		}
		data := c.Bytes()
		b.Run(kind+"/ours", func(b *testing.B) {
			var it xor.Iterator
			var sum float64
			for b.Loop() {
				it.Reset(data)
				for it.Next() {
					_, v := it.At()
					sum += v
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/sample")
			_ = sum
		})
		b.Run(kind+"/chunkenc", func(b *testing.B) {
			var ch chunkenc.XORChunk
			var it chunkenc.Iterator
			var sum float64
			for b.Loop() {
				ch.Reset(data)
				it = ch.Iterator(it)
				for it.Next() == chunkenc.ValFloat {
					_, v := it.At()
					sum += v
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/sample")
			_ = sum
		})
	}
}
