// Package probe runs one memory/latency experiment against a live server:
// it drives HTTP load at a URL while sampling the serving process's USS, PSS
// and RSS from /proc/PID/smaps_rollup, and keeps the result in a file so two
// runs (before and after a change) can be compared side by side.
//
// The experiment answers the question a memory fix always raises: how much
// memory does it save, and what does it cost in latency? A result holds the
// settings, the target, every request's latency and status, and every
// memory sample, so a comparison needs nothing but two files.
package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memdoctor/memdoctor/internal/safeio"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/memdoctor/memdoctor/internal/outfile"

	"github.com/memdoctor/memdoctor/internal/stats"
)

// Kind names the file format; Version is its version. Load refuses files
// of another kind and newer versions.
const (
	Kind    = "memdoctor-probe"
	Version = 1
)

// Settings are the options a run was made with.
type Settings struct {
	// URL is the target with any user:password part redacted.
	URL string `json:"url"`
	// Method is the HTTP method (GET).
	Method string `json:"method"`
	// Requests is the number of measured requests asked for (0 with a
	// duration).
	Requests int `json:"requests"`
	// Concurrency is the number of closed-loop workers.
	Concurrency int `json:"concurrency"`
	// DurationSeconds bounds the run by time instead of count (0: count).
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	// RatePerSecond caps the total request rate (0: as fast as answered).
	RatePerSecond float64 `json:"rate_per_second,omitempty"`
	// Warmup requests were sent before measuring and are not counted.
	Warmup int `json:"warmup"`
	// TimeoutSeconds is the per-request timeout.
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// IntervalSeconds is the memory sampling interval.
	IntervalSeconds float64 `json:"interval_seconds"`
	// HeaderNames lists the extra request headers sent; their values are
	// not kept (they often carry tokens).
	HeaderNames []string `json:"header_names,omitempty"`
}

// Target is the process whose memory was sampled.
type Target struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Requests counts the measured requests by outcome.
type Requests struct {
	Total int `json:"total"`
	// OK answered 2xx.
	OK int `json:"ok"`
	// NotOK answered with another status.
	NotOK int `json:"not_ok"`
	// Errors got no answer (refused, reset, timed out).
	Errors int `json:"errors"`
	// Status counts answers by HTTP status; "error" counts failures.
	Status map[string]int `json:"status"`
}

// Latency summarizes request latencies, in seconds.
type Latency struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_seconds"`
	P50   float64 `json:"p50_seconds"`
	P90   float64 `json:"p90_seconds"`
	P99   float64 `json:"p99_seconds"`
	Max   float64 `json:"max_seconds"`
}

// MemSample is one reading of the target's memory.
type MemSample struct {
	// Seconds since the start of the measured run (negative: baseline).
	Seconds float64 `json:"t"`
	// Phase is baseline (before any request), run or after.
	Phase    string `json:"phase"`
	USSBytes int64  `json:"uss_bytes"`
	PSSBytes int64  `json:"pss_bytes"`
	RSSBytes int64  `json:"rss_bytes"`
}

// MemStat is the median and worst (largest) of one measure over the run's
// samples, in bytes.
type MemStat struct {
	Median int64 `json:"median_bytes"`
	Worst  int64 `json:"worst_bytes"`
}

// Memory summarizes the samples taken during the run (baseline and after
// samples are kept apart: they show the state without load).
type Memory struct {
	Samples  int        `json:"samples"`
	USS      MemStat    `json:"uss"`
	PSS      MemStat    `json:"pss"`
	RSS      MemStat    `json:"rss"`
	Baseline *MemSample `json:"baseline,omitempty"`
	After    *MemSample `json:"after,omitempty"`
}

// Result is one probe run, as saved.
type Result struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// Label names the run (the variant under test), when given.
	Label    string    `json:"label,omitempty"`
	Settings Settings  `json:"settings"`
	Target   Target    `json:"target"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// ElapsedSeconds is the measured part's wall time (without warmup).
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Requests       Requests `json:"requests"`
	// RequestsPerSecond is the achieved throughput.
	RequestsPerSecond float64 `json:"requests_per_second"`
	Latency           Latency `json:"latency"`
	Memory            Memory  `json:"memory"`
	// LatenciesSeconds is every measured request's latency, in completion
	// order, failures included.
	LatenciesSeconds []float64   `json:"latencies_seconds"`
	MemSamples       []MemSample `json:"mem_samples"`
	// Notes say what went wrong or what to keep in mind (too few memory
	// samples, failed requests).
	Notes []string `json:"notes,omitempty"`
}

// Summarize fills Latency and Memory from the raw latencies and samples.
func (r *Result) Summarize() {
	r.Latency = summarizeLatency(r.LatenciesSeconds)
	r.Memory = summarizeMemory(r.MemSamples)
	if r.ElapsedSeconds > 0 {
		r.RequestsPerSecond = float64(r.Requests.Total) / r.ElapsedSeconds
	}
}

func summarizeLatency(xs []float64) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return Latency{
		Count: len(xs),
		Mean:  sum / float64(len(xs)),
		P50:   stats.Quantile(xs, 0.50),
		P90:   stats.Quantile(xs, 0.90),
		P99:   stats.Quantile(xs, 0.99),
		Max:   slices.Max(xs),
	}
}

func summarizeMemory(samples []MemSample) Memory {
	var m Memory
	var uss, pss, rss []float64
	for i := range samples {
		s := samples[i]
		switch s.Phase {
		case PhaseBaseline:
			if m.Baseline == nil {
				m.Baseline = &s
			}
			continue
		case PhaseAfter:
			m.After = &s
			continue
		}
		uss = append(uss, float64(s.USSBytes))
		pss = append(pss, float64(s.PSSBytes))
		rss = append(rss, float64(s.RSSBytes))
	}
	m.Samples = len(uss)
	m.USS, m.PSS, m.RSS = memStat(uss), memStat(pss), memStat(rss)
	return m
}

func memStat(xs []float64) MemStat {
	if len(xs) == 0 {
		return MemStat{}
	}
	return MemStat{Median: int64(math.Round(stats.Median(xs))), Worst: int64(slices.Max(xs))}
}

// Sample phases.
const (
	PhaseBaseline = "baseline"
	PhaseRun      = "run"
	PhaseAfter    = "after"
)

// Save writes r as indented JSON to path, through a temporary file renamed
// into place so a reader never sees half a result.
func Save(path string, r *Result) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := outfile.WriteBytes(path, 0o644, append(data, '\n')); err != nil {
		return fmt.Errorf("save probe result: %w", err)
	}
	return nil
}

// ErrNotProbe is returned by Load for a file that is not a probe result.
var ErrNotProbe = errors.New("not a memdoctor probe result")

// Load reads a result saved by Save.
func Load(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	r, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Decode reads a result from JSON, checks its kind and version, and
// recomputes the summaries from the raw data (so a hand-edited summary
// cannot disagree with the samples).
func Decode(rd io.Reader) (*Result, error) {
	var r Result
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotProbe, err)
	}
	if r.Kind != Kind {
		return nil, fmt.Errorf("%w: kind %q, want %q", ErrNotProbe, r.Kind, Kind)
	}
	if r.Version < 1 || r.Version > Version {
		return nil, fmt.Errorf("probe result version %d: this memdoctor reads versions 1 to %d (upgrade memdoctor)", r.Version, Version)
	}
	for _, x := range r.LatenciesSeconds {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("%w: latency %v is not a duration", ErrNotProbe, x)
		}
	}
	if len(r.LatenciesSeconds) == 0 && len(r.MemSamples) == 0 {
		return nil, fmt.Errorf("%w: it holds no requests and no memory samples (an empty or truncated result)", ErrNotProbe)
	}
	r.Summarize()
	return &r, nil
}

// WriteJSON writes r as indented JSON (the saved format).
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// IsResult reports whether path is a JSON document whose "kind" names
// a probe result.
func IsResult(path string) bool {
	f, err := safeio.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&head); err != nil {
		return false
	}
	return head.Kind == Kind
}
