package httpsafe

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/redirecttest"
)

func TestCheckRedirect(t *testing.T) {
	other, hits := redirecttest.Elsewhere(t, "elsewhere")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/stolen?token=s3cret", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/there", http.StatusTemporaryRedirect)
		case "/there":
			_, _ = io.WriteString(w, "here")
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer srv.Close()
	cl := Client(nil)

	resp, err := cl.Get(srv.URL + "/here")
	if err != nil {
		t.Fatalf("a redirect on the same host: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "here" {
		t.Errorf("same-host redirect gave %q", body)
	}

	_, err = cl.Get(srv.URL + "/away")
	if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), "only to the same scheme and host") {
		t.Errorf("redirect to 127.0.0.2: %v, want ErrRedirect", err)
	}
	// What callers show (url.Error itself names the target as given).
	if shown := errors.Unwrap(err).Error(); strings.Contains(shown, "s3cret") || !strings.Contains(shown, "127.0.0.2") {
		t.Errorf("the refusal shows the token, or not the target: %v", shown)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
	if _, err := cl.Get(srv.URL + "/loop"); !errors.Is(err, ErrRedirect) {
		t.Errorf("endless redirects: %v", err)
	}

	// A client given keeps its settings.
	base := &http.Client{Timeout: 7}
	if c := Client(base); c.Timeout != 7 || c.CheckRedirect == nil || base.CheckRedirect != nil {
		t.Errorf("Client(base) = %+v; base now %+v", c, base)
	}
}

func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"http://h/a", "http://h:80/b", true},
		{"https://H:443/", "https://h/x", true},
		{"http://h/", "https://h/", false},
		{"http://h:9090/", "http://h:9091/", false},
		{"http://127.0.0.1:80/", "http://127.0.0.2:80/", false},
		{"http://h/", "http://h.evil/", false},
	} {
		a, _ := url.Parse(c.a)
		b, _ := url.Parse(c.b)
		if got := SameOrigin(a, b); got != c.same {
			t.Errorf("SameOrigin(%s, %s) = %v", c.a, c.b, got)
		}
	}
}
