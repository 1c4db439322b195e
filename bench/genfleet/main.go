// Command genfleet writes a synthetic fleet's node_exporter history with
// known pathologies as OpenMetrics files (one per chunk of time) and a
// manifest.json naming the hosts each pathology was injected on, for
// promtool tsdb create-blocks-from openmetrics.
//
// With -tsdb or -vm it writes no files but the manifest: the same samples
// go straight into a Prometheus data directory as TSDB blocks of -chunk
// each, and into a running VictoriaMetrics through its JSON import, both
// at once.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

func main() {
	out := flag.String("o", "fleet", "output directory")
	hosts := flag.Int("hosts", 60, "number of hosts")
	days := flag.Int("days", 15, "days of history")
	interval := flag.Duration("interval", 5*time.Minute, "scrape interval")
	chunk := flag.Duration("chunk", 24*time.Hour, "time span of each output file")
	end := flag.String("end", "", "time of the last sample, RFC 3339 (default: two hours ago)")
	seed := flag.Uint64("seed", 1, "random seed")
	tsdbDir := flag.String("tsdb", "", "write TSDB blocks into this Prometheus data directory instead of OpenMetrics files")
	vmURL := flag.String("vm", "", "import into the VictoriaMetrics at this URL instead of writing OpenMetrics files")
	flag.Parse()
	o := fleettest.Options{Hosts: *hosts, Days: *days, Interval: *interval, Chunk: *chunk, Seed: *seed}
	if *end != "" {
		t, err := time.Parse(time.RFC3339, *end)
		if err != nil {
			fmt.Fprintln(os.Stderr, "genfleet: -end:", err)
			os.Exit(2)
		}
		o.End = t
	}
	if *tsdbDir != "" || *vmURL != "" {
		direct(fleettest.Plan(o), *out, *tsdbDir, *vmURL, *chunk)
		return
	}
	m, err := fleettest.Plan(o).Write(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genfleet:", err)
		os.Exit(1)
	}
	fmt.Printf("%d hosts, %d samples, %s … %s, %d files in %s\n", len(m.Hosts), m.Samples,
		m.Start.Format(time.RFC3339), m.End.Format(time.RFC3339), len(m.Files), *out)
}

// direct writes the manifest into out and the fleet into the TSDB
// directory tsdbDir and the VictoriaMetrics at vmURL (either may be ""),
// the two at once.
func direct(f *fleettest.Fleet, out, tsdbDir, vmURL string, chunk time.Duration) {
	m, err := f.WriteManifest(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genfleet:", err)
		os.Exit(1)
	}
	var wg sync.WaitGroup
	failed := false
	var mu sync.Mutex
	run := func(what string, do func() (string, error)) {
		wg.Go(func() {
			t0 := time.Now()
			msg, err := do()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintf(os.Stderr, "genfleet: %s: %v\n", what, err)
				failed = true
				return
			}
			fmt.Fprintf(os.Stderr, "%s: %s in %.1f s\n", what, msg, time.Since(t0).Seconds())
		})
	}
	if tsdbDir != "" {
		run("tsdb", func() (string, error) {
			n, err := writeTSDB(f, tsdbDir, chunk)
			return fmt.Sprintf("%d blocks of %s written", n, chunk), err
		})
	}
	if vmURL != "" {
		run("victoria-metrics", func() (string, error) {
			return fmt.Sprintf("%d series imported", len(f.Hosts)*fleettest.Metrics), importVM(f, vmURL)
		})
	}
	wg.Wait()
	if failed {
		os.Exit(1)
	}
	fmt.Printf("%d hosts, %d samples, %s … %s\n", len(m.Hosts), m.Samples,
		m.Start.Format(time.RFC3339), m.End.Format(time.RFC3339))
}
