// Package redact removes secrets from URLs before memdoctor stores or shows
// them: the password of the user information, and the values of query
// parameters whose names say they carry a credential. What identifies the
// endpoint (scheme, host, port, path) is kept, so a redacted URL still
// names what was read.
package redact

import (
	"net/url"
	"strings"
)

// Mask stands where a secret was.
const Mask = "xxxxx"

// secretWords: a query parameter whose name contains one of these (in any
// case) is taken for a credential.
var secretWords = []string{"token", "key", "pass", "secret", "auth", "sig", "credential", "session", "cookie", "jwt", "bearer"}

// SecretName tells whether a parameter name is taken for a credential.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// URL returns raw with its secrets masked. A string that does not parse as
// a URL is cut before anything that could hold one (user information and
// the query).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		s := raw
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
		if i := strings.LastIndexByte(s, '@'); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				s = s[:j+3] + Mask + s[i:]
			} else {
				s = Mask + s[i:]
			}
		}
		return s
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = Mask
		} else {
			changed := false
			for k, vs := range q {
				if SecretName(k) {
					for i := range vs {
						vs[i] = Mask
					}
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
