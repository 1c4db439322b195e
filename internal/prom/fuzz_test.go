package prom

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// answer is a transport that answers every request with one body.
type answer struct {
	status int
	body   []byte
}

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a.body))}, nil
}

// FuzzAnswer feeds arbitrary server answers to both query kinds: an error
// or a result, never a panic, and a result only from a success.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1.5,"2"]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},"values":[[1,"1"],[2,"NaN"]]}]},"warnings":["partial"]}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1,"3"]}}`,
		`{"status":"error","errorType":"bad_data","error":"parse error"}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"x"]]}]}}`,
		`<html>`, ``, `{}`, `{"status":"success"}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1.5,"+Inf"]},{"metric":{"instance":"b"},"value":[1.5,"NaN"]}]}}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1,"-Inf"]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a\u001b[2J"},"values":[[1,"+Inf"],[2,"-Inf"]]}]}}`,
	} {
		f.Add(200, []byte(s))
		f.Add(503, []byte(s))
	}
	hostile, _ := filepath.Glob("../../testdata/hostile/prometheus/*")
	for _, p := range hostile {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(200, data)
		}
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			return
		}
		c, err := New(Options{URL: "http://fuzz.invalid", Transport: answer{status, body}, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		v, err := c.Query(ctx, "up", time.Unix(1, 0))
		if err == nil && v == nil {
			t.Fatal("no error and no result")
		}
		for _, s := range v {
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				t.Fatalf("a %v value from %q", s.Value, body)
			}
		}
		ss, err := c.QueryRange(ctx, "up", time.Unix(0, 0), time.Unix(10, 0), time.Second)
		if err == nil && !bytes.Contains(body, []byte("success")) {
			t.Fatalf("a result from %q", body)
		}
		for _, s := range ss {
			for _, p := range s.Points {
				if f := p.V; math.IsNaN(f) || math.IsInf(f, 0) {
					t.Fatalf("a %v point from %q", f, body)
				}
			}
		}
	})
}
