package runtimes

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A scraped endpoint that redirects to another host (127.0.0.2, another
// loopback address) is refused; one on the same host is followed.
func TestScrapeRedirects(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var stolen atomic.Int64
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		stolen.Add(1)
		_, _ = io.WriteString(w, "go_goroutines 1\n")
	}))
	_ = other.Listener.Close()
	other.Listener = l
	other.Start()
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/metrics?token=s3cret", http.StatusMovedPermanently)
		case "/old":
			http.Redirect(w, r, "/metrics", http.StatusMovedPermanently)
		default:
			_, _ = io.WriteString(w, "go_goroutines 7\n")
		}
	}))
	defer srv.Close()

	_, err = Scraper{}.Fetch(context.Background(), srv.URL+"/away")
	if err == nil || !strings.Contains(err.Error(), "only to the same scheme and host") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("redirect to 127.0.0.2: %v", err)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("127.0.0.2 was scraped %d times", n)
	}
	fams, err := Scraper{Client: &http.Client{}}.Fetch(context.Background(), srv.URL+"/old")
	if err != nil || fams["go_goroutines"].GetMetric()[0].GetUntyped().GetValue() != 7 {
		t.Errorf("same-host redirect: %v, %v", fams, err)
	}
}
