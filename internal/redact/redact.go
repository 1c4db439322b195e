// Package redact removes secrets from URLs before memdoctor stores or shows
// them: the user information (a password, or a user name standing alone,
// which is how many services take a token), the values of parameters
// whose names say they carry a credential (in the query, with & or ; between
// them, and as matrix parameters of a path segment, "/x;token=S"), and the
// fragment. What identifies the endpoint (scheme, host, port, path) is
// kept, so a redacted URL still names what was read.
package redact

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Mask stands where a secret was.
const Mask = "xxxxx"

// secretWords: a parameter whose name contains one of these (in any case)
// is taken for a credential ("pass" covers passwd and password, "key"
// apikey and api_key, "cred" credential(s), "sess" session ids).
var secretWords = []string{"token", "key", "pass", "pwd", "secret", "auth", "sig", "cred", "sess", "cookie", "jwt", "bearer"}

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
// a URL is cut before anything that could hold one (the user information,
// path parameters, the query and the fragment).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return cut(raw)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
	}
	if u.Opaque != "" {
		u.Opaque = maskPath(u.Opaque)
	}
	if ep := u.EscapedPath(); strings.Contains(ep, ";") {
		masked := maskPath(ep)
		p, err := url.PathUnescape(masked)
		if err != nil {
			return cut(raw)
		}
		u.Path, u.RawPath = p, masked
	}
	u.RawQuery = maskParams(u.RawQuery, "&;")
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// cut returns what precedes the first ; ? or # of s, with its user
// information masked.
func cut(s string) string {
	if i := strings.IndexAny(s, ";?#"); i >= 0 {
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

// maskPath masks the secret matrix parameters of each segment of an
// escaped path ("/a;jsessionid=S/b" becomes "/a;jsessionid=xxxxx/b").
func maskPath(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if name, params, ok := strings.Cut(seg, ";"); ok {
			segs[i] = name + ";" + maskParams(params, ";")
		}
	}
	return strings.Join(segs, "/")
}

// maskParams masks the values of the secret parameters of list, name=value
// pairs with any of seps between them; the order and everything else are
// kept as written. A name that does not unescape is masked whole.
func maskParams(list, seps string) string {
	if list == "" {
		return ""
	}
	var b strings.Builder
	for list != "" {
		i := strings.IndexAny(list, seps)
		kv, sep := list, ""
		if i >= 0 {
			kv, sep, list = list[:i], list[i:i+1], list[i+1:]
		} else {
			list = ""
		}
		k, _, hasValue := strings.Cut(kv, "=")
		name, err := url.QueryUnescape(k)
		switch {
		case err != nil:
			kv = Mask
		case SecretName(name) && hasValue:
			kv = k + "=" + Mask
		case SecretName(name):
			kv = k
		}
		b.WriteString(kv)
		b.WriteString(sep)
	}
	return b.String()
}

// Err returns err with the URL of every *url.Error in its chain redacted:
// net/http names the URL of a failed request in its error (without the
// password, but with the query and path parameters). The url.Errors are
// changed in place (err must be the caller's own, as what http.Client.Do
// returns), and the message of an error that wrapped one is rewritten;
// errors.Is and errors.As see the same chain.
func Err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	found := false
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ue, ok := e.(*url.Error); ok { //nolint:errorlint // the loop walks the chain itself
			shown := URL(ue.URL)
			msg = strings.ReplaceAll(msg, strconv.Quote(ue.URL), strconv.Quote(shown))
			msg = strings.ReplaceAll(msg, ue.URL, shown)
			ue.URL, found = shown, true
		}
	}
	if !found {
		return err
	}
	if _, ok := err.(*url.Error); ok { //nolint:errorlint // err itself: its message is made from the changed URL
		return err
	}
	return &redacted{msg: msg, err: err}
}

// redacted is an error whose message was redacted.
type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// CommandLine returns a command line (its words separated by spaces, as a
// runtime reports it) with its secrets masked: the value of an option or
// a NAME=value word whose name says it carries a credential
// (--password=S, --token S, API_KEY=S), and the secrets of the URLs in
// it (URL).
func CommandLine(cmd string) string {
	words := strings.Fields(cmd)
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, value, hasValue := strings.Cut(w, "=")
		bare := strings.TrimLeft(name, "-/")
		switch {
		case hasValue && !strings.Contains(name, "://") && strings.Contains(value, "://"):
			words[i] = name + "=" + URL(value)
		case strings.Contains(w, "://"):
			words[i] = URL(w)
		case SecretName(bare) && hasValue:
			words[i] = name + "=" + Mask
		case SecretName(bare) && strings.HasPrefix(w, "-") && i+1 < len(words):
			i++
			words[i] = Mask
		}
	}
	return strings.Join(words, " ")
}
