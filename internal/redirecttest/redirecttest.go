// Package redirecttest serves the other end of a redirect for tests that
// check memdoctor's HTTP clients refuse redirects to another host: a
// server on a second loopback address, 127.0.0.2, that counts what reaches
// it. Only tests import it.
package redirecttest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Elsewhere starts a server on 127.0.0.2 that answers body to every
// request and counts the requests; it is closed when the test ends. The
// test is skipped when 127.0.0.2 cannot be bound. A request of memdoctor's
// metrics discovery (User-Agent memdoctor-discover, from a check that
// another package's test runs beside this one and that asks this test
// process' loopback ports for /metrics) is answered but not counted: it
// followed no redirect.
func Elsewhere(t *testing.T, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != "memdoctor-discover" {
			hits.Add(1)
		}
		_, _ = io.WriteString(w, body)
	}))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &hits
}
