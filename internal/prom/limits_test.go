package prom

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The refusals the engines send when a query passes one of their limits
// (VictoriaMetrics 1.79's and Prometheus' texts, as they answer) are
// limits; a bad query is not.
func TestAPIErrorLimit(t *testing.T) {
	for _, c := range []struct {
		msg   string
		limit bool
		// series: refused for the series touched or the query's length,
		// which a shorter range does not help.
		series bool
	}{
		{`error when executing query="node_memory_MemTotal_bytes{instance=\"h1\"}" on the time range (start=1795722500000, end=1795808900000, step=60000): too many points for the given step=60000, start=1795722500000 and end=1795808900000: 1441; cannot exceed -search.maxPointsPerTimeseries=500`, true, false},
		{`error when executing query="max by (instance) (last_over_time(node_memory_MemTotal_bytes[1d]))" for (time=1795808872925, step=300000): search error after reading 0 data blocks: error when searching for tagFilters=[{__name__="node_memory_MemTotal_bytes"}] on the time range [2026-11-26T19:42:52.925Z..2026-11-27T19:47:52.925Z]: error when searching tsids: the number of matching timeseries exceeds 5; either narrow down the search or increase -search.max* command-line flag values at vmselect`, true, true},
		{"too long query; got 17232 bytes; mustn't exceed `-search.maxQueryLen=16384` bytes", true, true},
		{`query processing would load too many samples into memory in query execution`, true, false},
		{`exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)`, true, false},
		{`1:5: parse error: unexpected character inside braces: '!'`, false, false},
		{`unknown function "ratee"`, false, false},
	} {
		e := &APIError{Status: 422, ErrorType: "422", Message: c.msg}
		if e.Limit() != c.limit || IsLimit(e) != c.limit || isSeriesLimit(e) != c.series {
			t.Errorf("Limit() = %v, series %v for %q, want %v, %v", e.Limit(), isSeriesLimit(e), c.msg, c.limit, c.series)
		}
	}
}

// An answer a VictoriaMetrics cluster marks partial becomes a warning.
func TestPartialAnswerWarns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","isPartial":true,"data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1700000000,"1"]}]}}`)
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Query(context.Background(), "up", time.Unix(1700000000, 0))
	if err != nil || len(v) != 1 {
		t.Fatalf("query: %v, %d samples", err, len(v))
	}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "partial") {
		t.Errorf("warnings %q, want one saying the answer is partial", ws)
	}
}
