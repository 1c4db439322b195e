package parquet

import (
	"io"
	"math"
	"strconv"
	"testing"
)

// BenchmarkWriter writes an export's shape: 2,000 series of 350 samples
// each, a second apart, one series after the other, with gauge-like values.
// It reports the file's bytes a row beside the time a row.
func BenchmarkWriter(b *testing.B) {
	const series, samples = 2000, 350
	names := make([]string, series)
	labels := make([]string, series)
	for i := range names {
		names[i] = "node_memory_" + strconv.Itoa(i%60) + "_bytes"
		labels[i] = `{pid="` + strconv.Itoa(1000+i) + `",comm="worker-` + strconv.Itoa(i%37) + `"}`
	}
	cols := []Column{{"instance", String}, {"name", String}, {"labels", String}, {"timestamp_ms", TimestampMillis}, {"value", Double}}
	for _, level := range []int{1, 6} {
		b.Run("gzip-"+strconv.Itoa(level), func(b *testing.B) {
			var size int64
			for b.Loop() {
				cw := &countingWriter{}
				pw, err := NewWriter(cw, cols, Options{Level: level})
				if err != nil {
					b.Fatal(err)
				}
				for s := range series {
					v := float64(s) * 4096
					for k := range samples {
						pw.String(0, "host-a")
						pw.String(1, names[s])
						pw.String(2, labels[s])
						pw.Int64(3, 1_764_000_000_000+int64(k)*1000+int64(k*7%5))
						v += math.Floor(math.Sin(float64(k+s))*8) * 4096
						pw.Double(4, v)
						if err := pw.EndRow(); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := pw.Close(); err != nil {
					b.Fatal(err)
				}
				size = cw.n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*series*samples), "ns/row")
			b.ReportMetric(float64(size)/float64(series*samples), "bytes/row")
		})
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
