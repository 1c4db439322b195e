// Command genpods writes a synthetic Kubernetes cluster's cadvisor and
// kube-state-metrics history (internal/fleettest's containers) as
// OpenMetrics files, one per two hours of samples, for promtool tsdb
// create-blocks-from openmetrics; with -node-exporter, also each node's
// node_exporter MemTotal and node_uname_info, so that the same containers
// can be diagnosed with and without node_exporter.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

func main() {
	out := flag.String("o", "pods", "output directory")
	nodes := flag.Int("nodes", 20, "number of nodes")
	perNode := flag.Int("pods", 100, "pods (one container each) per node")
	hours := flag.Int("hours", 24, "hours of history")
	end := flag.String("end", "", "time of the last sample, RFC 3339 (default: the last full hour, three hours ago)")
	nodeExporter := flag.Bool("node-exporter", false, "also write node_exporter's MemTotal and node_uname_info per node")
	flag.Parse()
	to := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	if *end != "" {
		t, err := time.Parse(time.RFC3339, *end)
		if err != nil {
			fail(err)
		}
		to = t
	}
	from := to.Add(-time.Duration(*hours) * time.Hour)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	var hosts []fleettest.Host
	for i := range *nodes {
		hosts = append(hosts, fleettest.Host{Instance: fmt.Sprintf("node-%04d:9100", i)})
	}
	all := filepath.Join(*out, "all.om")
	ctrs, err := fleettest.WriteContainers(all, fleettest.ContainerOptions{Hosts: hosts, PerHost: *perNode, From: from, To: to,
		Interval: 5 * time.Minute, KillAfter: to.Add(-time.Duration(*hours) * time.Hour * 5 / 6), Seed: 1})
	if err != nil {
		fail(err)
	}
	if *nodeExporter {
		f, err := os.OpenFile(all, os.O_RDWR, 0)
		if err != nil {
			fail(err)
		}
		// Replace the final "# EOF" with the nodes' series.
		st, _ := f.Stat()
		if _, err := f.Seek(st.Size()-int64(len("# EOF\n")), 0); err != nil {
			fail(err)
		}
		w := bufio.NewWriter(f)
		for _, fam := range []string{"node_memory_MemTotal_bytes", "node_uname_info"} {
			_, _ = fmt.Fprintf(w, "# TYPE %s gauge\n", fam) // bufio keeps the error for Flush
			for _, h := range hosts {
				node := strings.TrimSuffix(h.Instance, ":9100")
				l := `instance="` + h.Instance + `",job="node"`
				v := "68719476736"
				if fam == "node_uname_info" {
					l += `,nodename="` + node + `",release="6.1.0-27-amd64"`
					v = "1"
				}
				for t := from; !t.After(to); t = t.Add(5 * time.Minute) {
					_, _ = fmt.Fprintf(w, "%s{%s} %s %d\n", fam, l, v, t.Unix())
				}
			}
		}
		_, _ = w.WriteString("# EOF\n")
		if err := w.Flush(); err != nil {
			fail(err)
		}
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
	n, err := split(all, 2*time.Hour)
	if err != nil {
		fail(err)
	}
	fmt.Printf("%d containers on %d nodes, %s … %s, %d files in %s\n", len(ctrs), *nodes, from.Format(time.RFC3339), to.Format(time.RFC3339), n, *out)
}

// split writes the samples of an OpenMetrics file into one file per span
// of time, each family's lines under its TYPE line, and removes it.
func split(path string, span time.Duration) (int, error) {
	in, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = in.Close() }()
	type part struct {
		f      *os.File
		w      *bufio.Writer
		family string
	}
	parts := map[int64]*part{}
	var typeLine string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			typeLine = line
			continue
		case line == "# EOF" || line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		ts, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		k := ts / int64(span.Seconds())
		p := parts[k]
		if p == nil {
			f, err := os.Create(fmt.Sprintf("%s.%d.om", strings.TrimSuffix(path, ".om"), k))
			if err != nil {
				return 0, err
			}
			p = &part{f: f, w: bufio.NewWriterSize(f, 256<<10)}
			parts[k] = p
		}
		if p.family != typeLine {
			_, _ = p.w.WriteString(typeLine + "\n")
			p.family = typeLine
		}
		_, _ = p.w.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	for _, p := range parts {
		_, _ = p.w.WriteString("# EOF\n")
		if err := p.w.Flush(); err != nil {
			return 0, err
		}
		if err := p.f.Close(); err != nil {
			return 0, err
		}
	}
	return len(parts), os.Remove(path)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genpods:", err)
	os.Exit(1)
}
