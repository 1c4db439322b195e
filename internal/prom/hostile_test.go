package prom

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Answers without end: a gzip bomb (about 300 KiB expanding to 1 GiB) and
// a body streamed forever. Each is cut at maxAnswer decoded bytes with a
// message that says so; before, a 2 MB bomb took the scan past 900 MB.
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
	for _, q := range []string{"bomb", "endless"} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := cl.Query(context.Background(), q, time.Now())
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "decodes to more than 128 MiB") {
			t.Errorf("%s: %v", q, err)
		}
		alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
		t.Logf("%s: refused after %s, %d MiB allocated", q, took.Round(time.Millisecond), alloc)
		if alloc > 400 {
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
	if len(ss) != 1 || len(ss[0].Points) != 2 || ss[0].Points[0].Value != 5 || ss[0].Points[1].Value != 6 {
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
