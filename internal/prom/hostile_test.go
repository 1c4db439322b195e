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
