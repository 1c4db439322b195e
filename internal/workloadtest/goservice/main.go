// Command goservice is a Go workload for memdoctor's runtime tests. It
// serves client_golang's default registry (Go and process collectors) on
// /metrics and the runtime's own figures on /stats:
//
//	goservice -mode gcheavy -listen 127.0.0.1:PORT   collects all the time (GOGC=1, garbage churn)
//	goservice -mode healthy -listen 127.0.0.1:PORT   little garbage, default GOGC
//	goservice -mode service -live MIB -listen ...    a live set of MIB and garbage at 16 MiB/s
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	sink    [][]byte
	garbage []byte      // service: the latest request's, dropped at the next
	live    []*[4]int64 // gcheavy: what each collection marks
)

func main() {
	mode := flag.String("mode", "healthy", "gcheavy or healthy")
	listen := flag.String("listen", "127.0.0.1:0", "address")
	liveMiB := flag.Int("live", 64, "service: MiB kept live")
	flag.Parse()
	// client_golang's Go collector with the runtime's GC CPU time as well
	// (go_cpu_classes_gc_total_cpu_seconds_total), as a service that opts
	// into runtime metrics exports it.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/gc/`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	http.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gc := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
		metrics.Read(gc)
		_, _ = fmt.Fprintf(w, "num_gc %d\npause_total_seconds %g\ngc_cpu_seconds %g\ngomaxprocs %d\nheap_alloc %d\nnow %g\n", ms.NumGC,
			float64(ms.PauseTotalNs)/1e9, gc[0].Value.Float64(), runtime.GOMAXPROCS(0), ms.HeapAlloc, float64(time.Now().UnixNano())/1e9)
	})
	go func() { log.Fatal(http.ListenAndServe(*listen, nil)) }()
	switch *mode {
	case "gcheavy":
		// GOGC=1 over a live heap of pointers that every cycle marks again.
		live = make([]*[4]int64, 1<<18)
		for i := range live {
			live[i] = new([4]int64)
		}
		debug.SetGCPercent(1)
		for w := 0; w < runtime.GOMAXPROCS(0); w++ {
			go churn()
		}
		select {}
	case "service":
		// A service's steady state: a live set it keeps (touched), and
		// request garbage the collector frees.
		keep := make([][]byte, *liveMiB)
		for i := range keep {
			keep[i] = make([]byte, 1<<20)
			for j := range keep[i] {
				keep[i][j] = byte(j)
			}
		}
		sink = keep
		for {
			garbage = make([]byte, 64<<10)
			garbage[len(garbage)-1] = 1
			time.Sleep(4 * time.Millisecond)
		}
	default:
		for {
			b := make([]byte, 64<<10)
			sink = append(sink[:0], b)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// churn allocates small objects as fast as it can: with GOGC=1 every few
// kilobytes start a collection.
func churn() {
	var keep [][]byte
	for i := 0; ; i++ {
		keep = append(keep, make([]byte, 256))
		if len(keep) > 64 {
			keep = keep[:0]
		}
	}
}
