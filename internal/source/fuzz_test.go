package source

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// FuzzTextReader: any input either fails with an InputError or yields
// snapshots in time order per instance that survive a round trip through
// OpenMetrics text unchanged.
func FuzzTextReader(f *testing.F) {
	for _, s := range []string{
		"# HELP a x\n# TYPE a gauge\na{x=\"1\"} 1.5 1700000000000\na{x=\"1\"} 2 1700000060000\n",
		"# TYPE c counter\nc_total{instance=\"h:9100\"} 3 1700000000.250\n# EOF\n",
		"{\"my.metric\",\"label.x\"=\"v\\n\"} 7 1700000000\n",
		"{__name__=\"node_load1\", instance=\"a\", job=\"node\"} 0.5 1700000000000\n",
		"x NaN 1700000000\ny +Inf 1700000000 # {trace=\"1\"} 2 1700000000\nz\t-1e3\t1700000000\n\n",
		"a 1 1700000000\na 2 1700000000\nb 1\n# EOF\na 3 1700000060\n# EOF\n",
		"a{x=\"t\\tx\\x41\\u00e9z\"} 1 1700000000\r\n",
	} {
		f.Add([]byte(s))
	}
	var seed bytes.Buffer
	writeOpenMetrics(&seed, map[string][]*sample.Snapshot{"vm": realSnapshots(f)[:2]}, false)
	f.Add(seed.Bytes()[:min(seed.Len(), 20000)])
	hostile, _ := filepath.Glob("../../testdata/hostile/openmetrics/*")
	for _, p := range hostile {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opt := IngestOptions{BufferSamples: 7}.withDefaults()
		ms := newMemSink(t)
		w := newWriter(oneByOne(ms.sink), opt)
		p := newTextParser("fuzz", "f", opt, time.Unix(1700000000, 0), w)
		err := p.parse(bytes.NewReader(data), nil)
		if err == nil {
			err = p.finish()
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		var n int64
		legacy := true
		for inst, ss := range ms.snapshots {
			if inst == "" {
				t.Fatal("empty instance")
			}
			for _, s := range ss {
				n += int64(len(s.Metrics))
				if ms := s.Time.UnixMilli(); ms > 1e14 || ms < -1e14 {
					legacy = false
				}
				for _, m := range s.Metrics {
					if m.Name == "" {
						t.Fatal("empty metric name")
					}
					if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
						t.Fatalf("%s = %v kept", m.Name, m.Value)
					}
					legacy = legacy && legacyName(m.Name, true)
					for i, l := range m.Labels {
						if l.Value == "" || l.Name == "instance" || (i > 0 && m.Labels[i-1].Name >= l.Name) {
							t.Fatalf("labels %v: empty value, instance, or unsorted", m.Labels)
						}
						legacy = legacy && legacyName(l.Name, false)
					}
				}
			}
		}
		if n != w.samples {
			t.Fatalf("%d samples written, stats say %d", n, w.samples)
		}
		if !legacy || len(ms.snapshots) == 0 {
			return
		}
		var out bytes.Buffer
		writeOpenMetrics(&out, ms.snapshots, false)
		ms2 := newMemSink(t)
		w2 := newWriter(oneByOne(ms2.sink), opt)
		p2 := newTextParser("again", "f", opt, time.Unix(0, 0), w2)
		if err := p2.parse(&out, nil); err != nil {
			t.Fatalf("re-reading our own output: %v\n%s", err, out.String())
		}
		if err := p2.finish(); err != nil {
			t.Fatal(err)
		}
		for inst, ss := range ms.snapshots {
			got := ms2.snapshots[inst]
			if len(got) != len(ss) {
				t.Fatalf("%s: %d scrapes after a round trip, want %d", inst, len(got), len(ss))
			}
			for i := range ss {
				g, w := byKey(got[i]), byKey(ss[i])
				if !got[i].Time.Equal(ss[i].Time) || len(g) != len(w) {
					t.Fatalf("%s scrape %d differs after a round trip", inst, i)
				}
				for k, v := range w {
					if gv, ok := g[k]; !ok || math.Float64bits(gv) != math.Float64bits(v) && !(math.IsNaN(gv) && math.IsNaN(v)) {
						t.Fatalf("%s scrape %d: %s = %v after a round trip, want %v", inst, i, k, gv, v)
					}
				}
			}
		}
	})
}

func legacyName(s string, metric bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') || (metric && c == ':')
		if !ok {
			return false
		}
	}
	return s != ""
}

// FuzzParseCronName: a name either is no cron file, fails with
// ErrCronName, or parses into a kind and time that format back to it.
func FuzzParseCronName(f *testing.F) {
	for _, s := range []string{
		"meminfo_2020-01-31.10:05", "slabinfo_2020-01-31.10:05:07.gz", "pressure_memory_2020-01-31.10:05",
		"meminfo_2020-02-30.10:05", "meminfo_2020-01-31.10:5", "README", "stat_9999-12-31.23:59:59",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		kind, at, gz, ok, err := ParseCronName(name, nil)
		if err != nil {
			if ok || !strings.Contains(err.Error(), "bad timestamp") {
				t.Fatalf("ParseCronName(%q): ok %v with error %v", name, ok, err)
			}
			return
		}
		if !ok {
			return
		}
		layout := cronLayout
		if strings.Count(strings.TrimSuffix(name, ".gz")[len(kind):], ":") == 2 {
			layout = cronLayoutSecs
		}
		back := kind + "_" + at.Format(layout)
		if gz {
			back += ".gz"
		}
		if back != name || cronPath(kind) == "" {
			t.Fatalf("ParseCronName(%q) = %q %s: formats back as %q", name, kind, at, back)
		}
	})
}
