package redirecttest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The server is on 127.0.0.2, answers the body and counts every request.
func TestElsewhere(t *testing.T) {
	srv, hits := Elsewhere(t, "elsewhere")
	if !strings.HasPrefix(srv.URL, "http://127.0.0.2:") {
		t.Errorf("served at %s, want 127.0.0.2", srv.URL)
	}
	for range 2 {
		resp, err := http.Get(srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(b) != "elsewhere" {
			t.Errorf("answered %q", b)
		}
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("%d requests counted, want 2", n)
	}
}
