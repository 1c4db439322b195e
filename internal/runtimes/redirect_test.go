package runtimes

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/redirecttest"
)

// A scraped endpoint that redirects to another host (127.0.0.2, another
// loopback address) is refused; one on the same host is followed.
func TestScrapeRedirects(t *testing.T) {
	other, stolen := redirecttest.Elsewhere(t, "go_goroutines 1\n")
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

	_, err := Scraper{}.Fetch(context.Background(), srv.URL+"/away")
	if err == nil || !strings.Contains(err.Error(), "only to the same scheme and host") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("redirect to 127.0.0.2: %v", err)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("127.0.0.2 was scraped %d times", n)
	}
	fams, err := Scraper{Client: &http.Client{}}.Fetch(context.Background(), srv.URL+"/old")
	if err != nil || fams["go_goroutines"] == nil || fams["go_goroutines"].members[0].value != 7 {
		t.Errorf("same-host redirect: %v, %v", fams, err)
	}
}
