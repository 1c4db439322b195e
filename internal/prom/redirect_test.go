package prom

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/redirecttest"
)

// A Prometheus URL that redirects to another host (127.0.0.2, another
// loopback address) is refused at once, without the credentials going
// there and without retries; a redirect on the same host is followed.
func TestRedirectOnlySameHost(t *testing.T) {
	other, stolen := redirecttest.Elsewhere(t, "")
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/away/"):
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/old/"):
			http.Redirect(w, r, "/new/"+strings.TrimPrefix(r.URL.Path, "/old/"), http.StatusPermanentRedirect)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1,"5"]}]}}`)
		}
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c, err := New(Options{URL: srv.URL + "/away", BearerTokenFile: tok, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Now())
	if err == nil || !strings.Contains(err.Error(), "only to the same scheme and host") || !strings.Contains(err.Error(), "127.0.0.2") {
		t.Errorf("redirect to 127.0.0.2: %v", err)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("127.0.0.2 got %d requests", n)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the refused redirect was asked %d times, want once (no retries)", n)
	}

	c, err = New(Options{URL: srv.URL + "/old", BearerTokenFile: tok})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Query(context.Background(), "up", time.Now())
	if err != nil || len(v) != 1 || v[0].Value != 5 {
		t.Errorf("same-host redirect: %v, %v", v, err)
	}
}
