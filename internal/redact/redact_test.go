package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:9090/metrics", "http://127.0.0.1:9090/metrics"},
		{"http://user:hunter2@host:8080/metrics", "http://user:xxxxx@host:8080/metrics"},
		{"http://host/metrics?token=hunter2", "http://host/metrics?token=xxxxx"},
		{"http://host/metrics?name[]=go&Api_Key=hunter2&X-Amz-Signature=hunter2", "http://host/metrics?Api_Key=xxxxx&X-Amz-Signature=xxxxx&name%5B%5D=go"},
		{"http://host/m?access_token=hunter2&password=hunter2&secret=hunter2", "http://host/m?access_token=xxxxx&password=xxxxx&secret=xxxxx"},
		{"http://host/m?format=text#hunter2", "http://host/m?format=text"},
		{"http://u:hunter2@[::1:bad/x?token=hunter2", "http://xxxxx@[::1:bad/x"},
		{"127.0.0.1:19610/", "127.0.0.1:19610/"},
	} {
		got := URL(c.in)
		if got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("URL(%q) keeps the secret: %q", c.in, got)
		}
	}
}

func FuzzURL(f *testing.F) {
	for _, s := range []string{"http://u:p@h/x?token=s", "%zz", "http://[::1]:80/?a=b;c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := URL(s)
		u, err := url.Parse(out)
		if err != nil {
			return
		}
		if p, has := u.User.Password(); has && p != Mask {
			t.Errorf("URL(%q) = %q keeps a password", s, out)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return
		}
		for k, vs := range q {
			for _, v := range vs {
				if SecretName(k) && v != Mask {
					t.Errorf("URL(%q) = %q keeps %s=%s", s, out, k, v)
				}
			}
		}
	})
}
