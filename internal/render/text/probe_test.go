package text

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/probe"
)

func probeResult(label string, uss []int64, lat []float64) *probe.Result {
	r := &probe.Result{Kind: probe.Kind, Version: probe.Version, Label: label, ElapsedSeconds: 2,
		Settings: probe.Settings{URL: "http://127.0.0.1:1/metrics", Concurrency: 1},
		Requests: probe.Requests{Total: len(lat), OK: len(lat)}, LatenciesSeconds: lat}
	r.MemSamples = append(r.MemSamples, probe.MemSample{Phase: probe.PhaseBaseline, USSBytes: 1})
	for _, u := range uss {
		r.MemSamples = append(r.MemSamples, probe.MemSample{Phase: probe.PhaseRun, USSBytes: u, PSSBytes: u + 10, RSSBytes: u + 20})
	}
	r.Summarize()
	return r
}

// Two runs side by side: the labels head the columns, each measure is a
// row, and the ratio B/A is printed.
func TestProbeCompareText(t *testing.T) {
	t.Parallel()
	a := probeResult("before", []int64{90, 70, 130, 80, 100}, []float64{0.098, 0.099, 0.100, 0.125})
	b := probeResult("after", []int64{17, 18, 17, 16, 17}, []float64{0.132, 0.134, 0.133, 0.234})
	var txt bytes.Buffer
	if err := ProbeCompareText(&txt, probe.Compare(a, b)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"USS median", "before", "after", "0.19x", "latency p99"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
}

// A saved result is a file anyone may have written, and the target chose
// its own name: text output escapes control characters in names, labels,
// URLs, status codes and notes.
func TestProbeTextEscapes(t *testing.T) {
	t.Parallel()
	mk := func(label string) *probe.Result {
		r := &probe.Result{Kind: probe.Kind, Version: probe.Version, Label: label + "\x1b[8m", ElapsedSeconds: 2,
			Target:           probe.Target{PID: 7, Comm: "ruby\x1b]0;pwned\x07\u009b2J"},
			Settings:         probe.Settings{URL: "http://127.0.0.1:1/\x1b[2J", Concurrency: 1},
			Requests:         probe.Requests{Total: 2, OK: 1, NotOK: 1, Status: map[string]int{"200": 1, "5\x1b[1m": 1}},
			LatenciesSeconds: []float64{0.1, 0.2}, Notes: []string{"note\x1b[31m"}}
		r.MemSamples = append(r.MemSamples, probe.MemSample{Phase: probe.PhaseBaseline, USSBytes: 1}, probe.MemSample{Phase: probe.PhaseRun, USSBytes: 2})
		r.Summarize()
		return r
	}
	var out strings.Builder
	if err := ProbeText(&out, mk("before")); err != nil {
		t.Fatal(err)
	}
	if err := ProbeCompareText(&out, probe.Compare(mk("before"), mk("after"))); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f) {
			t.Fatalf("control character %U printed raw:\n%s", r, out.String())
		}
	}
	if !strings.Contains(out.String(), `ruby\x1b]0;pwned\x07\u009b2J[7]`) {
		t.Errorf("the name is not shown escaped:\n%s", out.String())
	}
}

// FuzzProbeText: any saved result that decodes prints, alone and compared
// with itself, without a control character shown raw.
func FuzzProbeText(f *testing.F) {
	f.Add(`{"kind":"memdoctor-probe","version":1,"latencies_seconds":[0.1,0.2],"mem_samples":[{"phase":"run","uss_bytes":5}]}`)
	f.Add(`{"kind":"memdoctor-probe","version":1,"mem_samples":[{"phase":"baseline"},{"phase":"after"}]}`)
	f.Add(`{"kind":"memdoctor-probe","version":1,"requests":{"status":{"200":1}}}`)
	hostile, _ := filepath.Glob("../../../testdata/hostile/json/*")
	for _, p := range hostile {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := probe.Decode(strings.NewReader(s))
		if err != nil {
			return
		}
		var b strings.Builder
		if err := ProbeText(&b, r); err != nil {
			t.Fatal(err)
		}
		if err := ProbeCompareText(&b, probe.Compare(r, r)); err != nil {
			t.Fatal(err)
		}
		for _, c := range b.String() {
			if c != '\n' && (c < 0x20 || c == 0x7f || c >= 0x80 && c <= 0x9f) {
				t.Fatalf("control character %U printed raw:\n%s", c, b.String())
			}
		}
	})
}
