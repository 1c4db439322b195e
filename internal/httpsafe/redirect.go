// Package httpsafe holds the HTTP client policy for endpoints memdoctor
// reads but does not control (Prometheus, scraped runtimes, probed
// servers): a redirect is followed only to the scheme and host of the
// request, so an answer cannot send memdoctor, or the credentials it
// carries, to another machine or service.
package httpsafe

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/memdoctor/memdoctor/internal/redact"
)

// ErrRedirect is matched by the error of a redirect refused.
var ErrRedirect = errors.New("redirect refused")

// maxRedirects is as many as net/http follows by default.
const maxRedirects = 10

// CheckRedirect is an http.Client.CheckRedirect that follows up to 10
// redirects, each to the same scheme, host and port as the first request.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("%w: stopped after %d redirects", ErrRedirect, maxRedirects)
	}
	from := via[len(via)-1].URL
	if !SameOrigin(via[0].URL, req.URL) {
		return fmt.Errorf("%w: %s redirects to %s: memdoctor follows redirects only to the same scheme and host",
			ErrRedirect, redact.URL(from.String()), redact.URL(req.URL.String()))
	}
	return nil
}

// Client returns c (a new client when nil) with CheckRedirect set; c
// itself is not changed.
func Client(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c // the settings; http.Client holds no state of its own
	}
	out.CheckRedirect = CheckRedirect
	return &out
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (an omitted port is the scheme's default).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
