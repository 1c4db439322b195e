// Command gencontainers writes a synthetic Kubernetes fleet's cadvisor and
// kube-state-metrics history (no node_exporter) as OpenMetrics files, one
// per chunk of time, for promtool tsdb create-blocks-from openmetrics: the
// input of bench/rightsize.sh. It streams: memory does not grow with the
// fleet. Containers cycle through four kinds: healthy (anon at 30-60% of
// the limit), cache-heavy (a fifth anon, the rest page cache, mostly
// inactive), growing (anon climbing steadily) and OOM-killed once and
// restarted.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	out := flag.String("o", "containers", "output directory")
	n := flag.Int("containers", 5000, "number of containers")
	perPod := flag.Int("per-pod", 2, "containers per pod")
	nodes := flag.Int("nodes", 100, "nodes")
	days := flag.Int("days", 14, "days of history")
	interval := flag.Duration("interval", time.Hour, "scrape interval")
	chunk := flag.Duration("chunk", 2*time.Hour, "time span of each output file")
	endS := flag.String("end", "", "time of the last sample, RFC 3339 (default: three hours ago)")
	flag.Parse()
	end := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	if *endS != "" {
		t, err := time.Parse(time.RFC3339, *endS)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gencontainers: -end:", err)
			os.Exit(2)
		}
		end = t
	}
	start := end.Add(-time.Duration(*days) * 24 * time.Hour)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gencontainers:", err)
		os.Exit(1)
	}
	files, samples := 0, 0
	for c0 := start; !c0.After(end); c0 = c0.Add(*chunk) {
		path := filepath.Join(*out, fmt.Sprintf("%d.om", c0.Unix()))
		to := c0.Add(*chunk - time.Nanosecond)
		if to.After(end) {
			to = end
		}
		s, err := writeChunk(path, c0, to, start, end, *interval, *n, *perPod, *nodes)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gencontainers:", err)
			os.Exit(1)
		}
		files++
		samples += s
	}
	fmt.Printf("%d containers, %d samples, %s … %s, %d files in %s\nend %s\n", *n, samples, start.Format(time.RFC3339), end.Format(time.RFC3339), files, *out, end.Format(time.RFC3339))
}

var families = []string{"container_memory_cache", "container_memory_rss", "container_memory_usage_bytes", "container_memory_working_set_bytes",
	"container_spec_memory_limit_bytes", "kube_pod_container_status_restarts_total"}

// values of container i at time t: rss, cache, inactive cache, limit,
// restarts.
func values(i int, t, start, end time.Time) (rss, cache, inactive, limit, restarts float64) {
	limit = float64(int64(256+128*(i%8)) << 20)
	frac := t.Sub(start).Seconds() / end.Sub(start).Seconds()
	noise := 0.02 * math.Sin(t.Sub(start).Hours()/3+float64(i))
	switch i % 4 {
	case 0: // healthy
		rss, cache, inactive = (0.30+0.30*float64(i%7)/7+noise)*limit, 0.08*limit, 0.05*limit
	case 1: // cache-heavy
		rss, cache, inactive = (0.20+noise/2)*limit, 0.72*limit, 0.62*limit
	case 2: // growing
		rss, cache, inactive = (0.30+0.55*frac+noise/4)*limit, 0.03*limit, 0.02*limit
	case 3: // OOM-killed at two thirds of the range, restarted
		kill := 2.0 / 3
		if frac < kill {
			rss = (0.5 + 0.49*frac/kill) * limit
		} else {
			rss, restarts = (0.2+noise)*limit, 1
		}
		cache, inactive = 0.02*limit, 0.01*limit
	}
	return rss, cache, inactive, limit, restarts
}

func writeChunk(path string, from, to, start, end time.Time, iv time.Duration, n, perPod, nodes int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	first := start.Add(((from.Sub(start) + iv - 1) / iv) * iv)
	samples := 0
	for fi, fam := range families {
		_, _ = fmt.Fprintf(w, "# TYPE %s unknown\n", fam)
		for i := range n {
			pod := i / perPod
			ns := []string{"shop", "data", "batch", "web"}[pod%4]
			var labels string
			if fi == len(families)-1 {
				labels = fmt.Sprintf(`container="c%d",instance="10.96.0.20:8080",job="kube-state-metrics",namespace="%s",pod="app-%d"`, i%perPod, ns, pod)
			} else {
				node := fmt.Sprintf("node-%d", pod%nodes)
				labels = fmt.Sprintf(`container="c%d",id="/kubepods/pod%d/%d",instance="%s:10250",job="kubelet",namespace="%s",node="%s",pod="app-%d"`,
					i%perPod, pod, i, node, ns, node, pod)
			}
			for t := first; !t.After(to); t = t.Add(iv) {
				rss, cache, inactive, limit, restarts := values(i, t, start, end)
				var v float64
				switch fam {
				case "container_memory_cache":
					v = cache
				case "container_memory_rss":
					v = rss
				case "container_memory_usage_bytes":
					v = rss + cache
				case "container_memory_working_set_bytes":
					v = rss + cache - inactive
				case "container_spec_memory_limit_bytes":
					v = limit
				default:
					v = restarts
				}
				_, _ = w.WriteString(fam + "{" + labels + "} " + strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " " + strconv.FormatInt(t.Unix(), 10) + "\n")
				samples++
			}
		}
	}
	_, _ = w.WriteString("# EOF\n") // bufio keeps the error for Flush
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return 0, err
	}
	return samples, f.Close()
}
