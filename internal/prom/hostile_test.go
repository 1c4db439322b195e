package prom

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Answers without end: a gzip bomb (about 1 MiB expanding to 1 GiB) and
// a body streamed forever. The bomb is refused once it expands 100-fold
// past 64 MiB, the endless body at maxAnswer decoded bytes, each with a
// message that says so; as they stream, nothing of them is held (before, a
// 2 MB bomb took the scan past 900 MB, then up to 128 MiB was read whole).
func TestHostileAnswersBounded(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	_, _ = io.WriteString(zw, `{"status":"success","data":{"resultType":"vector","result":[`)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for i := 0; i < 1024; i++ {
		_, _ = zw.Write(chunk)
	}
	_ = zw.Close()
	t.Logf("bomb: %d KiB compressed, 1 GiB decoded", bomb.Len()>>10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err == nil && strings.Contains(r.Form.Get("query"), "endless") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[`)
			for i := 0; i < 4096; i++ { // 4 GiB at most: the client hangs up long before
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb.Bytes())
	}))
	defer srv.Close()
	cl, err := New(Options{URL: srv.URL, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"bomb": "expands more than 100-fold from gzip", "endless": "decodes to more than 256 MiB"} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := cl.Query(context.Background(), q, time.Now())
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", q, err)
		}
		alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
		t.Logf("%s: refused after %s, %d MiB allocated", q, took.Round(time.Millisecond), alloc)
		if alloc > 16 { // decoded as it streams: nothing of it is held
			t.Errorf("%s: %d MiB allocated reading one answer", q, alloc)
		}
	}
}

// NaN and infinite values in answers (a stale marker, a division by zero in
// the query, or a hostile server) never reach the rules or JSON output: they
// are dropped, and a warning names the query and how many.
func TestNonFiniteValuesDropped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		switch q := r.Form.Get("query"); {
		case strings.HasPrefix(r.URL.Path, "/api/v1/query_range"):
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1,"5"],[2,"NaN"],[3,"+Inf"],[4,"6"]]}]}}`)
		case q == "scalar_inf":
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"-Inf"]}}`)
		default:
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1,"+Inf"]},{"metric":{"instance":"b"},"value":[1,"7"]},{"metric":{"instance":"c"},"value":[1,"NaN"]}]}}`)
		}
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := c.Query(ctx, "vector_mixed", time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0].Labels["instance"] != "b" || v[0].Value != 7 {
		t.Errorf("vector: %+v, want only instance b = 7", v)
	}
	if v, err = c.Query(ctx, "scalar_inf", time.Unix(1, 0)); err != nil || len(v) != 0 {
		t.Errorf("scalar -Inf: %+v, %v; want no sample", v, err)
	}
	ss, err := c.QueryRange(ctx, "range_mixed", time.Unix(1, 0), time.Unix(4, 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || len(ss[0].Points) != 2 || ss[0].Points[0].V != 5 || ss[0].Points[1].V != 6 {
		t.Errorf("range: %+v, want the points 5 and 6", ss)
	}
	ws := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{"2 values of the answer to vector_mixed are NaN or infinite: dropped",
		"1 values of the answer to scalar_inf", "2 values of the answer to range_mixed"} {
		if !strings.Contains(ws, want) {
			t.Errorf("warnings %q do not say %q", ws, want)
		}
	}
}

// serve answers every request with body.
func serve(t *testing.T, body func(w io.Writer)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body(w)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{URL: srv.URL, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A point repeating the time of the point before it replaces it as the
// answer streams, and a series given twice is one series: 50,000 repeats
// of one point are held as one (before, all 50,004 points were returned).
// A point older than the last of its series is dropped; a warning counts
// them.
func TestAnswerRepeatsHeldOnce(t *testing.T) {
	c := serve(t, func(w io.Writer) {
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h1"},"values":[`)
		_, _ = io.WriteString(w, strings.Repeat(`[100,"1"],`, 50000))
		_, _ = io.WriteString(w, `[100,"2"],[160,"3"]]},{"metric":{"instance":"h1"},"values":[[100,"9"],[160,"5"],[220,"4"]]}]}}`)
	})
	ss, err := c.QueryRange(context.Background(), "q", time.Unix(100, 0), time.Unix(220, 0), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%d series, want 1", len(ss))
	}
	var got []string
	for _, p := range ss[0].Points {
		got = append(got, pointString(p))
	}
	if strings.Join(got, ",") != "2 @[100],5 @[160],4 @[220]" {
		t.Errorf("points %v, want 2 @[100], 5 @[160], 4 @[220]", got)
	}
	if ws := strings.Join(c.Warnings(), "\n"); !strings.Contains(ws, "50002 points of the answer to q repeat or precede") {
		t.Errorf("warnings %q do not count the 50,002 points dropped", ws)
	}
}

// An answer holds at most the points its query can have per series and
// maxHeld bytes of series and points in all; past either it is refused,
// naming the budget and what to narrow (before, both were read: a vector
// of 1.5 million series, 60 MB of JSON, was held whole).
func TestAnswerBudgets(t *testing.T) {
	ctx := context.Background()
	c := serve(t, func(w io.Writer) {
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h1"},"values":[`)
		for i := range 100 {
			fmt.Fprintf(w, `[%d,"1"],`, 100+i)
		}
		_, _ = io.WriteString(w, `[1000,"1"]]}]}}`)
	})
	_, err := c.QueryRange(ctx, "q", time.Unix(100, 0), time.Unix(160, 0), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "has more than the 8 points the query can have") || !strings.Contains(err.Error(), "narrow --match or --range") {
		t.Errorf("points past the range's steps: %v", err)
	}
	c = serve(t, func(w io.Writer) {
		bw := bufio.NewWriter(w)
		_, _ = io.WriteString(bw, `{"status":"success","data":{"resultType":"vector","result":[`)
		for i := range 1_500_000 {
			fmt.Fprintf(bw, `{"metric":{"instance":"h%d"},"value":[1,"1"]},`, i)
		}
		_, _ = io.WriteString(bw, `{"metric":{},"value":[1,"1"]}]}}`)
		_ = bw.Flush()
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = c.Query(ctx, "q", time.Unix(1, 0))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "holds more than 64 MiB of series and points") {
		t.Errorf("1.5 million series: %v", err)
	}
	t.Logf("1.5 million series: %v; %d MiB allocated", err, (after.TotalAlloc-before.TotalAlloc)>>20)
}

// The answers of testdata/hostile/prometheus: repeats are held once (the
// last value kept), a point older than its series' last is dropped, labels
// after the points still name them, a key nested past 64 levels and a cut
// answer are errors.
func TestHostileAnswerFiles(t *testing.T) {
	ctx := context.Background()
	at := time.Unix(1700000000, 0)
	for name, want := range map[string]string{
		"repeated-point.json":       `{instance="h1"}: 2 @[1700000000]`,
		"repeated-series.json":      `{instance="h1"} 2`,
		"points-out-of-order.json":  `{instance="h1"}: 3 @[1700000060] 4 @[1700000120]`,
		"values-before-metric.json": `{instance="h1"}: 2 @[1700000000]`,
		"deep-extra.json":           `error`,
		"truncated.json":            `error`,
	} {
		body, err := os.ReadFile(filepath.Join("../../testdata/hostile/prometheus", name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{URL: "http://hostile.invalid", Transport: answer{200, body}, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if strings.Contains(string(body), `"vector"`) {
			v, err := c.Query(ctx, "q", at)
			if err != nil {
				got = append(got, "error")
			}
			for _, s := range v {
				got = append(got, fmt.Sprintf("%s %g", s.Labels, s.Value))
			}
		} else {
			ss, err := c.QueryRange(ctx, "q", at.Add(-time.Hour), at.Add(time.Hour), time.Minute)
			if err != nil {
				got = append(got, "error")
			}
			for _, s := range ss {
				ps := ""
				for _, p := range s.Points {
					ps += " " + pointString(p)
				}
				got = append(got, s.Labels.String()+":"+ps)
			}
		}
		if g := strings.Join(got, "; "); g != want {
			t.Errorf("%s: %.300q, want %q", name, g, want)
		}
	}
}

// pointString writes a point as the answers' expectations do: the value,
// then the time in seconds, "2 @[100.5]".
func pointString(p Point) string {
	return strconv.FormatFloat(p.V, 'f', -1, 64) + " @[" + strconv.FormatFloat(float64(p.T)/1000, 'f', -1, 64) + "]"
}
