// Command gen30d writes a store holding DAYS days of one host sampled every
// INTERVAL, for benchmarking diagnosis over long recordings. Every series
// of a real capture is carried forward: counters grow by random amounts,
// gauges wander, constants stay; memory drifts slowly as on a real host.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

func main() {
	out := flag.String("o", "", "store file to write")
	days := flag.Int("days", 30, "days of data")
	interval := flag.Duration("interval", 15*time.Second, "sampling interval")
	base := flag.String("capture", "testdata/captures/malloc-arenas-6.18-x86_64-hybrid.txtar", "capture whose series are carried forward")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen30d: -o FILE is required")
		os.Exit(2)
	}
	if err := run(*out, *days, *interval, *base); err != nil {
		fmt.Fprintln(os.Stderr, "gen30d:", err)
		os.Exit(1)
	}
}

func counter(name string) bool {
	return strings.HasSuffix(name, "_total") || (strings.HasPrefix(name, "node_vmstat_") && !strings.HasPrefix(name, "node_vmstat_nr_"))
}

func run(out string, days int, interval time.Duration, base string) (err error) {
	fsys, prov, err := capture.LoadFile(base)
	if err != nil {
		return err
	}
	pfs := procfs.NewFSFrom(fsys, prov.PageSize)
	pfs.GlibcBanner = prov.Glibc
	res, err := collect.Collect(pfs, collect.Options{TopProcesses: 10, TopCgroups: 10, ArenaScan: true})
	if err != nil {
		return err
	}
	ms := res.Snapshot.Metrics
	st, err := store.Open(out, store.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, len(ms))
	for i, m := range ms {
		vals[i] = m.Value
	}
	start := time.Now().Add(-time.Duration(days) * 24 * time.Hour).Truncate(interval)
	n := int(time.Duration(days) * 24 * time.Hour / interval)
	batch := make([]*sample.Snapshot, 0, 512)
	began := time.Now()
	for k := 0; k < n; k++ {
		s := &sample.Snapshot{Time: start.Add(time.Duration(k) * interval), Metrics: make([]sample.Metric, len(ms))}
		for i, m := range ms {
			switch {
			case m.Name == "node_boot_time_seconds" || strings.HasSuffix(m.Name, "_info") || m.Name == "node_memory_MemTotal_bytes":
			case counter(m.Name):
				if vals[i] > 0 && r.IntN(4) == 0 {
					vals[i] += math.Floor(r.ExpFloat64() * math.Max(1, vals[i]*1e-7))
				}
			case strings.HasSuffix(m.Name, "_bytes") && vals[i] > 1<<20:
				// Memory wanders by a few pages; one sample in 20 moves.
				if r.IntN(20) == 0 {
					vals[i] = math.Max(0, vals[i]+float64(4096*(r.IntN(65)-32)))
				}
			}
			s.Metrics[i] = sample.Metric{Name: m.Name, Labels: m.Labels, Value: vals[i]}
		}
		batch = append(batch, s)
		if len(batch) == cap(batch) || k == n-1 {
			if err := st.Append("bench", batch...); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	stats, err := st.Stats()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d days every %v, %d series, %d samples, %.1f MiB (%.2f bytes/sample) in %v\n",
		out, days, interval, stats.Series, stats.Samples, float64(stats.FileBytes)/(1<<20),
		float64(stats.FileBytes)/float64(stats.Samples), time.Since(began).Round(time.Second))
	return nil
}
