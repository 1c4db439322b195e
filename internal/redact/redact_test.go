package redact

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:9090/metrics", "http://127.0.0.1:9090/metrics"},
		{"http://user:hunter2@host:8080/metrics", "http://user:xxxxx@host:8080/metrics"},
		{"http://host/metrics?token=hunter2", "http://host/metrics?token=xxxxx"},
		{"http://host/metrics?name[]=go&Api_Key=hunter2&X-Amz-Signature=hunter2", "http://host/metrics?name[]=go&Api_Key=xxxxx&X-Amz-Signature=xxxxx"},
		{"http://host/m?access_token=hunter2&password=hunter2&secret=hunter2", "http://host/m?access_token=xxxxx&password=xxxxx&secret=xxxxx"},
		{"http://host/m?format=text#hunter2", "http://host/m?format=text"},
		{"http://u:hunter2@[::1:bad/x?token=hunter2", "http://xxxxx@[::1:bad/x"},
		{"127.0.0.1:19610/", "127.0.0.1:19610/"},
		// Names that say "password" without the word.
		{"http://host/m?pwd=hunter2", "http://host/m?pwd=xxxxx"},
		{"http://host/m?user=ops&passwd=hunter2&apikey=hunter2", "http://host/m?user=ops&passwd=xxxxx&apikey=xxxxx"},
		{"http://host/m?sig=hunter2&signature=hunter2&X-Goog-Credential=hunter2&auth=hunter2", "http://host/m?sig=xxxxx&signature=xxxxx&X-Goog-Credential=xxxxx&auth=xxxxx"},
		{"http://host/m?PWD=hunter2&Key=hunter2", "http://host/m?PWD=xxxxx&Key=xxxxx"},
		// An encoded name is a name.
		{"http://host/m?%74oken=hunter2", "http://host/m?%74oken=xxxxx"},
		// Semicolons: matrix parameters of a path segment, and the
		// separator some servers still take in a query.
		{"http://host/metrics;token=hunter2", "http://host/metrics;token=xxxxx"},
		{"http://host/a;jsessionid=hunter2/metrics;format=text", "http://host/a;jsessionid=xxxxx/metrics;format=text"},
		{"http://host/m?format=text;token=hunter2", "http://host/m?format=text;token=xxxxx"},
		{"http://host/m;pwd=hunter2?x=1", "http://host/m;pwd=xxxxx?x=1"},
		// A user name alone is how many services take a token.
		{"https://hunter2@host/metrics", "https://xxxxx@host/metrics"},
		{"https://hunter2:@host/metrics", "https://hunter2:xxxxx@host/metrics"},
		// What does not parse is cut before anything that could hold one.
		{"http://host/m;token=hunter2%zz", "http://host/m"},
		{"http://host/%zz?pwd=hunter2", "http://host/%zz"},
	} {
		got := URL(c.in)
		if got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "hunter2") && c.in != "https://hunter2:@host/metrics" {
			t.Errorf("URL(%q) keeps the secret: %q", c.in, got)
		}
	}
}

// secretNames are parameter names that carry credentials in the URLs of
// common services and libraries.
var secretNames = []string{"pwd", "passwd", "password", "pass", "token", "access_token", "id_token", "refresh_token",
	"key", "apikey", "api_key", "api-key", "secret", "client_secret", "auth", "authorization", "sig", "signature",
	"credential", "credentials", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Security-Token", "sessionid",
	"jsessionid", "session", "jwt", "bearer", "cookie", "private_token", "Pwd", "PASSWD", "sv_sig"}

// Every secret name, in the query (either separator), as a matrix
// parameter of any path segment, and with any letter escaped, loses its
// value; the rest of the URL stays.
func TestURLSecretPlaces(t *testing.T) {
	const s = "S3cr3tVal"
	for _, name := range secretNames {
		if !SecretName(name) {
			t.Errorf("SecretName(%q) = false", name)
			continue
		}
		esc := "%" + fmt.Sprintf("%02X", name[0]) + name[1:]
		for _, in := range []string{
			"http://h:1/metrics?" + name + "=" + s,
			"http://h:1/metrics?a=1&" + name + "=" + s + "&b=2",
			"http://h:1/metrics?a=1;" + name + "=" + s,
			"http://h:1/metrics;" + name + "=" + s,
			"http://h:1/x;" + name + "=" + s + "/metrics?a=1",
			"http://h:1/metrics?" + esc + "=" + s,
			"http://h:1/metrics#" + name + "=" + s,
			"http://" + s + "@h:1/metrics",
			"http://u:" + s + "@h:1/metrics?" + name + "=" + s,
		} {
			out := URL(in)
			if strings.Contains(out, s) {
				t.Errorf("URL(%q) = %q keeps the secret", in, out)
			}
			if !strings.HasPrefix(out, "http://") || !strings.Contains(out, "h:1/") {
				t.Errorf("URL(%q) = %q lost the endpoint", in, out)
			}
		}
	}
	for _, name := range []string{"format", "name[]", "match", "target", "module", "debug"} {
		in := "http://h:1/metrics?" + name + "=go"
		if SecretName(name) || URL(in) != in {
			t.Errorf("%q is taken for a secret: %q", name, URL(in))
		}
	}
}

// Errors of net/http name the URL they were about; Err masks it.
func TestErr(t *testing.T) {
	const s = "S3cr3tVal"
	raw := "http://127.0.0.1:1/metrics;token=" + s + "?pwd=" + s
	_, err := http.Get(raw)
	if err == nil {
		t.Fatal("port 1 answered")
	}
	if !strings.Contains(err.Error(), s) {
		t.Fatalf("net/http no longer names the URL in its errors (%v): this test proves nothing", err)
	}
	wrapped := fmt.Errorf("scrape: %w", err)
	got := Err(wrapped)
	if strings.Contains(got.Error(), s) || !strings.Contains(got.Error(), "127.0.0.1:1/metrics") {
		t.Errorf("Err: %v", got)
	}
	var ue *url.Error
	if !errors.As(got, &ue) || !errors.Is(got, ue.Err) {
		t.Errorf("Err lost the chain: %v", got)
	}
	if Err(nil) != nil {
		t.Error("Err(nil) != nil")
	}
}

// A redacted URL (of one that parses) is a fixed point, and any holds no value of a parameter
// named like a secret wherever it stands (query, path parameters, user
// information, fragment).
func FuzzURL(f *testing.F) {
	for _, s := range []string{"http://u:p@h/x?token=s", "%zz", "http://[::1]:80/?a=b;c", "http://h/m;token=s/x;pwd=t?u=1;apikey=v",
		"http://tok@h/?%70wd=s", "http://h/?a=1#sig=s", "http://h/m?pwd=s&pwd=t", "h:1/x;key=s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := URL(s)
		if _, err := url.Parse(s); err == nil && URL(out) != out {
			again := URL(out)
			t.Errorf("URL(%q) = %q, and URL of that = %q", s, out, again)
		}
		u, err := url.Parse(out)
		if err != nil {
			return
		}
		if u.Fragment != "" {
			t.Errorf("URL(%q) = %q keeps a fragment", s, out)
		}
		if u.User != nil {
			if p, has := u.User.Password(); (has && p != Mask) || (!has && u.User.Username() != Mask && u.User.Username() != "") {
				t.Errorf("URL(%q) = %q keeps user information", s, out)
			}
		}
		check := func(where, list string, seps string) {
			for _, kv := range strings.FieldsFunc(list, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
				k, v, hasValue := strings.Cut(kv, "=")
				name, err := url.QueryUnescape(k)
				if err != nil {
					name = k
				}
				if SecretName(name) && hasValue && v != Mask {
					t.Errorf("URL(%q) = %q keeps %s=%s in the %s", s, out, k, v, where)
				}
			}
		}
		check("query", u.RawQuery, "&;")
		for _, seg := range strings.Split(u.EscapedPath()+"/"+u.Opaque, "/") {
			if _, params, ok := strings.Cut(seg, ";"); ok {
				check("path", params, ";")
			}
		}
	})
}

func TestCommandLine(t *testing.T) {
	for in, want := range map[string]string{
		"dotnet app.dll --urls http://0.0.0.0:80":                      "dotnet app.dll --urls http://0.0.0.0:80",
		"dotnet app.dll --password=hunter2 --db-token abc other":       "dotnet app.dll --password=xxxxx --db-token xxxxx other",
		"/app/Svc API_KEY=s3cret --conn postgres://u:pw@db/x?sslkey=k": "/app/Svc API_KEY=xxxxx --conn postgres://u:xxxxx@db/x?sslkey=xxxxx",
		"/app/Svc --db=redis://:pw@cache:6379":                         "/app/Svc --db=redis://:xxxxx@cache:6379",
		"/app/Svc --Secret":                                            "/app/Svc --Secret",
		"python  /srv/host.py   busy":                                  "python /srv/host.py busy",
	} {
		if got := CommandLine(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
