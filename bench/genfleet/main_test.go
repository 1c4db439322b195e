package main

// The direct routes (TSDB blocks from the block writer, VictoriaMetrics'
// JSON import) must hold exactly the samples of the OpenMetrics files the
// old route backfilled: the same series, labels, times and values.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

type point struct {
	t int64 // milliseconds
	v float64
}

// samples are a fleet's points by series, the series written as in the
// OpenMetrics files: name{label="value",...}, labels sorted.
type samples map[string][]point

// smallFleet is five hosts over a day every ten minutes, in two-hour
// files: every pathology, a reboot, both kernels.
func smallFleet() fleettest.Options {
	return fleettest.Options{Hosts: 5, Days: 1, Interval: 10 * time.Minute, Chunk: 2 * time.Hour,
		End: time.Date(2026, 11, 20, 7, 30, 0, 0, time.UTC)}
}

// readOM reads the samples of a fleet's OpenMetrics files.
func readOM(t *testing.T, dir string, files []string) samples {
	t.Helper()
	out := samples{}
	for _, name := range files {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			// name{labels} value seconds: the labels may hold spaces.
			i := strings.LastIndexByte(line, ' ')
			j := strings.LastIndexByte(line[:max(i, 0)], ' ')
			if j < 0 {
				t.Fatalf("%s: unreadable line %q", name, line)
			}
			v, err1 := strconv.ParseFloat(line[j+1:i], 64)
			ts, err2 := strconv.ParseInt(line[i+1:], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: unreadable line %q", name, line)
			}
			out[line[:j]] = append(out[line[:j]], point{ts * 1000, v})
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// seriesKey writes a series as the OpenMetrics files do.
func seriesKey(lbls map[string]string) string {
	names := make([]string, 0, len(lbls))
	for n := range lbls {
		if n != model.MetricNameLabel {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(lbls[model.MetricNameLabel])
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + strconv.Quote(lbls[n]))
	}
	b.WriteByte('}')
	return b.String()
}

// differences lists how got differs from want (at most ten lines).
func differences(want, got samples) []string {
	var out []string
	add := func(format string, a ...any) {
		if len(out) < 10 {
			out = append(out, fmt.Sprintf(format, a...))
		}
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			add("%s missing", k)
		case len(g) != len(w):
			add("%s: %d samples, want %d", k, len(g), len(w))
		default:
			for i := range w {
				if g[i] != w[i] {
					add("%s: sample %d is %v at %d, want %v at %d", k, i, g[i].v, g[i].t, w[i].v, w[i].t)
					break
				}
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			add("%s: not in the files", k)
		}
	}
	return out
}

func TestDirectRoutesSameSamples(t *testing.T) {
	omDir := t.TempDir()
	m, err := fleettest.Plan(smallFleet()).Write(omDir)
	if err != nil {
		t.Fatal(err)
	}
	want := readOM(t, omDir, m.Files)
	if len(want) != len(m.Hosts)*fleettest.Metrics {
		t.Fatalf("%d series in the files, want %d", len(want), len(m.Hosts)*fleettest.Metrics)
	}
	// The comparison can fail: one value off is found.
	for k, pts := range want {
		off := samples{}
		for k2, p := range want {
			off[k2] = p
		}
		off[k] = slices.Clone(pts)
		off[k][len(pts)/2].v++
		if d := differences(want, off); len(d) != 1 {
			t.Fatalf("one value changed, differences found: %q", d)
		}
		break
	}

	t.Run("tsdb", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tsdb")
		blocks, err := writeTSDB(fleettest.Plan(smallFleet()), dir, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		// A block per file, as promtool makes one per two hours.
		if blocks != len(m.Files) {
			t.Errorf("%d blocks, want one for each of the %d files", blocks, len(m.Files))
		}
		// Read as Prometheus reads it, with the write-ahead log it would
		// make (empty).
		if err := os.Mkdir(filepath.Join(dir, "wal"), 0o755); err != nil {
			t.Fatal(err)
		}
		db, err := tsdb.OpenDBReadOnly(dir, "", promslog.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		bs, err := db.Blocks()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if span := b.Meta().MaxTime - b.Meta().MinTime; span > (2 * time.Hour).Milliseconds() {
				t.Errorf("block %s spans %d ms, more than two hours", b.Meta().ULID, span)
			}
		}
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = q.Close() }()
		got := samples{}
		ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
		for ss.Next() {
			s := ss.At()
			k := seriesKey(s.Labels().Map())
			it := s.Iterator(nil)
			for it.Next() == chunkenc.ValFloat {
				ts, v := it.At()
				got[k] = append(got[k], point{ts, v})
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
		if ss.Err() != nil {
			t.Fatal(ss.Err())
		}
		for _, d := range differences(want, got) {
			t.Error(d)
		}
	})

	t.Run("victoria-metrics", func(t *testing.T) {
		base := startVictoria(t, t.TempDir())
		if err := importVM(fleettest.Plan(smallFleet()), base); err != nil {
			t.Fatal(err)
		}
		get(t, base+"/internal/force_flush")
		u := base + "/api/v1/export?" + url.Values{"match[]": {`{__name__=~".+"}`}, "start": {"0"},
			"end": {strconv.FormatInt(m.End.Add(time.Hour).Unix(), 10)}}.Encode()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != 200 {
			t.Fatalf("export: %s", resp.Status)
		}
		got := samples{}
		dec := json.NewDecoder(resp.Body)
		for dec.More() {
			var line struct {
				Metric     map[string]string
				Values     []float64
				Timestamps []int64
			}
			if err := dec.Decode(&line); err != nil {
				t.Fatal(err)
			}
			k := seriesKey(line.Metric)
			for i, ts := range line.Timestamps {
				got[k] = append(got[k], point{ts, line.Values[i]})
			}
		}
		for k := range got {
			slices.SortFunc(got[k], func(a, b point) int { return int(a.t - b.t) })
		}
		for _, d := range differences(want, got) {
			t.Error(d)
		}
	})
}

func get(t *testing.T, u string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s: %s", u, resp.Status)
	}
}

// startVictoria runs Debian's victoria-metrics with its data in dir on a
// free loopback port until the test ends, and returns its URL.
func startVictoria(t *testing.T, dir string) string {
	t.Helper()
	u, _ := fleettest.StartVictoria(t, dir)
	return u
}
