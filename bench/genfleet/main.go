// Command genfleet writes a synthetic fleet's node_exporter history with
// known pathologies as OpenMetrics files (one per chunk of time) and a
// manifest.json naming the hosts each pathology was injected on, for
// promtool tsdb create-blocks-from openmetrics.
package main

import (
	"flag"
	"fmt"
	"os"
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
	m, err := fleettest.Plan(o).Write(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genfleet:", err)
		os.Exit(1)
	}
	fmt.Printf("%d hosts, %d samples, %s … %s, %d files in %s\n", len(m.Hosts), m.Samples,
		m.Start.Format(time.RFC3339), m.End.Format(time.RFC3339), len(m.Files), *out)
}
