package probe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memdoctor/memdoctor/internal/redirecttest"
)

// A probed server that redirects elsewhere (here 127.0.0.2, another
// loopback address) does not send the probe there: before, every request
// and its headers followed the redirect to any host.
func TestRunRefusesRedirectElsewhere(t *testing.T) {
	fsys := liveFS(t)
	other, stolen := redirecttest.Elsewhere(t, "")
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first answer (the preflight) is served, the next ones on
		// /later redirect away; /away always does.
		if served.Add(1) > 1 || r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()

	_, err := Run(context.Background(), fsys, Options{URL: srv.URL + "/away", PID: os.Getpid(), Requests: 3, Concurrency: 1,
		Headers: []string{"Authorization: Bearer s3cret"}})
	if err == nil || !strings.Contains(err.Error(), "only to the same scheme and host") {
		t.Errorf("preflight redirected to 127.0.0.2: %v", err)
	}

	served.Store(0)
	res, err := Run(context.Background(), fsys, Options{URL: srv.URL + "/later", PID: os.Getpid(), Requests: 4, Concurrency: 1,
		Headers: []string{"Authorization: Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests.Errors != 4 || res.Requests.Total != 4 {
		t.Errorf("redirected requests counted %v, want 4 errors", res.Requests)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("127.0.0.2 got %d requests", n)
	}
}
