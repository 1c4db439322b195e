package record

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, each written as PEM files.
type testPKI struct {
	dir                         string
	caFile, certFile, keyFile   string
	clientCert                  tls.Certificate
	otherCAClient               tls.Certificate // signed by a CA the server does not trust
	pool                        *x509.CertPool
	clientCertFile, otherCAFile string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	caKey, caCert, caDER := makeCA(t, "memdoctor test CA")
	p.pool.AddCert(caCert)
	p.caFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := makeLeaf(t, caCert, caKey, &x509.Certificate{
		Subject: pkix.Name{CommonName: "server"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	p.certFile = writePEM(t, dir, "server.pem", "CERTIFICATE", srvDER)
	p.keyFile = writePEM(t, dir, "server.key", "EC PRIVATE KEY", srvKey)
	u, _ := url.Parse("spiffe://example.org/prometheus")
	cliDER, cliKey := makeLeaf(t, caCert, caKey, &x509.Certificate{
		Subject: pkix.Name{CommonName: "prometheus"}, DNSNames: []string{"prometheus.example.org"}, URIs: []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	p.clientCert = keyPair(t, cliDER, cliKey)
	p.clientCertFile = writePEM(t, dir, "client.pem", "CERTIFICATE", cliDER)
	otherKey, otherCA, otherDER := makeCA(t, "someone else's CA")
	p.otherCAFile = writePEM(t, dir, "other-ca.pem", "CERTIFICATE", otherDER)
	oDER, oKey := makeLeaf(t, otherCA, otherKey, &x509.Certificate{
		Subject: pkix.Name{CommonName: "intruder"}, DNSNames: []string{"prometheus.example.org"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	p.otherCAClient = keyPair(t, oDER, oKey)
	return p
}

var serial atomic.Int64

func makeCA(t *testing.T, name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func makeLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (der, keyDER []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err = x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der, keyDER
}

func keyPair(t *testing.T, der, keyDER []byte) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func bcryptHash(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// TestCheckWebConfigRefuses: every broken file is refused at start with a
// message that names what is wrong, and never prints a hash or a key.
func TestCheckWebConfigRefuses(t *testing.T) {
	p := newTestPKI(t)
	hash := bcryptHash(t, "pw")
	tlsOK := "tls_server_config:\n  cert_file: " + p.certFile + "\n  key_file: " + p.keyFile + "\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"bad yaml", "tls_server_config: [\n", "YAML"},
		{"not a map", "- a\n- b\n", "want a map of fields at the top level"},
		{"unknown top field", "basic_auth_user:\n  a: " + hash + "\n", `unknown field "basic_auth_user" at the top level`},
		{"unknown tls field", "tls_server_config:\n  certfile: x\n", `line 2: unknown field "certfile" in tls_server_config`},
		{"unknown http field", "http_server_config:\n  http3: true\n", `unknown field "http3" in http_server_config`},
		{"duplicate field", tlsOK + "tls_server_config:\n  cert_file: y\n", `field "tls_server_config" given twice`},
		{"two documents", tlsOK + "---\n" + tlsOK, "more than one document"},
		{"not bcrypt", "basic_auth_users:\n  prometheus: not-a-hash\n", `basic_auth_users: user "prometheus": the password is not a bcrypt hash`},
		{"plain password", "basic_auth_users:\n  prometheus: secret123\n", "htpasswd"},
		{"missing cert", "tls_server_config:\n  cert_file: " + filepath.Join(p.dir, "missing.pem") + "\n  key_file: " + p.keyFile + "\n", "missing.pem"},
		{"cert without key", "tls_server_config:\n  cert_file: " + p.certFile + "\n", "no key: add key_file"},
		{"key without cert", "tls_server_config:\n  key_file: " + p.keyFile + "\n", "no certificate: add cert_file"},
		{"key of another cert", "tls_server_config:\n  cert_file: " + p.caFile + "\n  key_file: " + p.keyFile + "\n", "do not load"},
		{"key is not PEM", "tls_server_config:\n  cert_file: " + p.certFile + "\n  key_file: " + p.certFile + "\n", "do not load"},
		{"bad client auth", tlsOK + "  client_auth_type: Always\n", `client_auth_type "Always"`},
		{"CA without auth type", tlsOK + "  client_ca_file: " + p.caFile + "\n", "client CAs without client_auth_type"},
		{"verify without CA", tlsOK + "  client_auth_type: RequireAndVerifyClientCert\n", "no client_ca_file"},
		{"CA file without certs", tlsOK + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: " + p.keyFile + "\n", "hold no PEM certificate"},
		{"bad version", tlsOK + "  min_version: TLS14\n", `min_version "TLS14"`},
		{"min above max", tlsOK + "  min_version: TLS13\n  max_version: TLS12\n", "above max_version"},
		{"bad cipher", tlsOK + "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n", `cipher suite "TLS_RSA_WITH_RC4_128_SHA"`},
		{"bad curve", tlsOK + "  curve_preferences: [P256]\n", `curve "P256"`},
		{"TLS settings without cert", "tls_server_config:\n  min_version: TLS13\n", "without a certificate"},
		{"header not allowed", "http_server_config:\n  headers:\n    Server: x\n", `header "Server" cannot be set`},
		{"header value not allowed", "http_server_config:\n  headers:\n    X-Frame-Options: allow\n", "X-Frame-Options"},
		{"burst 0", "rate_limit:\n  interval: 1s\n", "burst must be 1 or more"},
		{"bad interval", "rate_limit:\n  interval: soon\n  burst: 1\n", "YAML"},
		{"wrong type", "basic_auth_users: [a, b]\n", "YAML"},
	} {
		path := filepath.Join(t.TempDir(), "web.yml")
		writeFile(t, path, c.yaml)
		err := CheckWebConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--web.config.file") {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), hash) || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: the error shows a secret: %v", c.name, err)
		}
	}
	if err := CheckWebConfig(filepath.Join(t.TempDir(), "none.yml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestCheckWebConfigAccepts: files in the toolkit's format that are right,
// with paths relative to the file's directory.
func TestCheckWebConfigAccepts(t *testing.T) {
	p := newTestPKI(t)
	certPEM, _ := os.ReadFile(p.certFile)
	keyPEM, _ := os.ReadFile(p.keyFile)
	indent := func(b []byte) string {
		return "    " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n    ")
	}
	for name, y := range map[string]string{
		"empty":        "",
		"comment only": "# nothing yet\n",
		"users only":   "basic_auth_users:\n  a: " + bcryptHash(t, "x") + "\n  b: " + bcryptHash(t, "y") + "\n",
		"relative paths": "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n" +
			"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n",
		"everything": "tls_server_config:\n  cert_file: " + p.certFile + "\n  key_file: " + p.keyFile +
			"\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: " + p.caFile +
			"\n  client_allowed_sans: [prometheus.example.org]\n  min_version: TLS12\n  max_version: TLS13" +
			"\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [X25519, CurveP256]" +
			"\n  prefer_server_cipher_suites: true\n" +
			"http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=31536000\n" +
			"rate_limit:\n  burst: 10\n  interval: 100ms\n",
		"inline PEM": "tls_server_config:\n  cert: |\n" + indent(certPEM) + "\n  key: |\n" + indent(keyPEM) + "\n",
		"old name":   "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  client_auth_type: RequireClientCert\n",
	} {
		path := filepath.Join(p.dir, "web-"+strings.ReplaceAll(name, " ", "-")+".yml")
		writeFile(t, path, y)
		if err := CheckWebConfig(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// webServer serves okHandler behind the web configuration in path.
func webServer(t *testing.T, path string) string {
	t.Helper()
	_, addr := serve(t, okHandler(), ServerOptions{MaxConns: 16, WebConfigFile: path})
	return addr
}

func getWith(t *testing.T, client *http.Client, u, user, pass string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" || pass != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

// TestWebGuardBasicAuth: over plain HTTP with users, only the right user
// and password get the page; others get 401 with a challenge; bcrypt runs
// once for a repeated right password.
func TestWebGuardBasicAuth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	writeFile(t, path, "basic_auth_users:\n  prometheus: "+bcryptHash(t, "s3cret")+"\n  grafana: "+bcryptHash(t, "other")+"\n"+
		"http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
	base := "http://" + webServer(t, path) + "/metrics"
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		user, pass string
		want       int
	}{
		{"prometheus", "s3cret", http.StatusOK},
		{"grafana", "other", http.StatusOK},
		{"prometheus", "other", http.StatusUnauthorized}, // another user's password
		{"prometheus", "s3cre", http.StatusUnauthorized},
		{"prometheus", "", http.StatusUnauthorized},
		{"root", "s3cret", http.StatusUnauthorized},
		{"Prometheus", "s3cret", http.StatusUnauthorized}, // names are exact
		{"", "", http.StatusUnauthorized},
	} {
		resp, body, err := getWith(t, client, base, c.user, c.pass)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("%q/%q: %d, want %d", c.user, c.pass, resp.StatusCode, c.want)
		}
		if c.want == http.StatusUnauthorized && (!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") || body == "ok\n") {
			t.Errorf("%q/%q: refused without a Basic challenge, or with the page: %q %q", c.user, c.pass, resp.Header.Get("WWW-Authenticate"), body)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%q/%q: the configured header is missing", c.user, c.pass)
		}
	}
}

// TestWebGuardCachesBcrypt: a scraper sending the same credentials does
// not pay a bcrypt check each time. At cost 12 a check takes ~0.2 s
// here; 20 requests must take far less than 20 checks.
func TestWebGuardCachesBcrypt(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), 12)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web.yml")
	writeFile(t, path, "basic_auth_users:\n  prometheus: "+string(h)+"\n")
	base := "http://" + webServer(t, path) + "/"
	client := &http.Client{Timeout: 30 * time.Second}
	start := time.Now()
	if resp, _, err := getWith(t, client, base, "prometheus", "pw"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	one := time.Since(start)
	start = time.Now()
	for range 20 {
		if resp, _, err := getWith(t, client, base, "prometheus", "pw"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("repeated request: %v %v", resp, err)
		}
	}
	if twenty := time.Since(start); twenty > 5*one {
		t.Errorf("20 repeated requests took %v, the first (with its bcrypt check) %v: not cached", twenty, one)
	}
	// A wrong password is not let in by the cache of the right one.
	if resp, _, _ := getWith(t, client, base, "prometheus", "pW"); resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong password after the right one: %v", resp)
	}
}

// TestWebGuardReloads: a change to the file applies to the next request:
// a new password, then a file that no longer reads (500, never open).
func TestWebGuardReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	writeFile(t, path, "basic_auth_users:\n  prometheus: "+bcryptHash(t, "old")+"\n")
	base := "http://" + webServer(t, path) + "/"
	client := &http.Client{Timeout: 10 * time.Second}
	code := func(pass string) int {
		resp, _, err := getWith(t, client, base, "prometheus", pass)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	if c := code("old"); c != 200 {
		t.Fatalf("old password: %d", c)
	}
	writeFile(t, path, "basic_auth_users:\n  prometheus: "+bcryptHash(t, "new")+"\n")
	if c1, c2 := code("old"), code("new"); c1 != 401 || c2 != 200 {
		t.Errorf("after the change: old password %d, new %d; want 401, 200", c1, c2)
	}
	writeFile(t, path, "basic_auth_users:\n  prometheus: plaintext\n")
	if c := code("new"); c != http.StatusInternalServerError {
		t.Errorf("a broken file: %d, want 500", c)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if c := code("new"); c != http.StatusInternalServerError {
		t.Errorf("a removed file: %d, want 500", c)
	}
}

// TestWebGuardRateLimit: past the burst, requests get 429 until the
// interval refills the bucket.
func TestWebGuardRateLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	writeFile(t, path, "rate_limit:\n  burst: 3\n  interval: 300ms\n")
	base := "http://" + webServer(t, path) + "/"
	client := &http.Client{Timeout: 10 * time.Second}
	var codes []int
	for range 5 {
		resp, _, err := getWith(t, client, base, "", "")
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 200 200 429 429]" {
		t.Errorf("codes %v, want 3 answered then 429", codes)
	}
	time.Sleep(350 * time.Millisecond)
	if resp, _, err := getWith(t, client, base, "", ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("after an interval: %v %v", resp, err)
	}
}

// TestWebGuardTLS: the certificate is served and verified by a client that
// trusts the CA; client certificates are required and verified as the
// file says; a renewed certificate is served without a restart.
func TestWebGuardTLS(t *testing.T) {
	p := newTestPKI(t)
	path := filepath.Join(p.dir, "web.yml")
	tlsOK := "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
	writeFile(t, path, tlsOK+"basic_auth_users:\n  prometheus: "+bcryptHash(t, "pw")+"\n")
	addr := webServer(t, path)
	client := func(cert *tls.Certificate, http2 bool) *http.Client {
		cfg := &tls.Config{RootCAs: p.pool}
		if cert != nil {
			// Sent whatever CAs the server names: a client with a
			// certificate from another CA must be refused by the server,
			// not held back by its own client.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: http2}}
	}
	resp, body, err := getWith(t, client(nil, true), "https://"+addr+"/", "prometheus", "pw")
	if err != nil || resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("TLS with the password: %v %v %q", resp, err, body)
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2 (the default)", resp.Proto)
	}
	if resp, _, err := getWith(t, client(nil, true), "https://"+addr+"/", "prometheus", "no"); err != nil || resp.StatusCode != 401 {
		t.Errorf("TLS with a wrong password: %v %v", resp, err)
	}
	if resp, _, err := getWith(t, &http.Client{Timeout: 5 * time.Second}, "http://"+addr+"/", "prometheus", "pw"); err == nil && resp.StatusCode == 200 {
		t.Errorf("plain HTTP to the TLS port was answered")
	}

	// Client certificates, required and verified against the CA.
	writeFile(t, path, tlsOK+"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"+
		"http_server_config:\n  http2: false\n")
	if _, _, err := getWith(t, client(nil, true), "https://"+addr+"/", "", ""); err == nil {
		t.Errorf("no client certificate: answered")
	}
	if _, _, err := getWith(t, client(&p.otherCAClient, true), "https://"+addr+"/", "", ""); err == nil {
		t.Errorf("a client certificate from another CA: answered")
	}
	resp, _, err = getWith(t, client(&p.clientCert, true), "https://"+addr+"/", "", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the CA's client certificate: %v %v", resp, err)
	}

	// Allowed SANs: the client's DNS name or URI is let in, others not.
	for _, c := range []struct {
		sans string
		ok   bool
	}{{"[prometheus.example.org]", true}, {"[spiffe://example.org/prometheus]", true}, {"[grafana.example.org]", false}} {
		writeFile(t, path, tlsOK+"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  client_allowed_sans: "+c.sans+"\n")
		_, _, err := getWith(t, client(&p.clientCert, false), "https://"+addr+"/", "", "")
		if (err == nil) != c.ok {
			t.Errorf("client_allowed_sans %s: error %v, want allowed %v", c.sans, err, c.ok)
		}
	}

	// http2: false at start: HTTP/1.1 only.
	h1 := filepath.Join(p.dir, "web-h1.yml")
	writeFile(t, h1, tlsOK+"http_server_config:\n  http2: false\n")
	resp, _, err = getWith(t, client(nil, true), "https://"+webServer(t, h1)+"/", "", "")
	if err != nil || resp.ProtoMajor != 1 {
		t.Errorf("http2: false: %v %v, want HTTP/1.1", resp, err)
	}

	// A renewed certificate (here: the client's, which the CA also
	// signed, with no 127.0.0.1 in it) is served at the next handshake.
	writeFile(t, path, "tls_server_config:\n  cert_file: client.pem\n  key_file: server.key\n")
	if _, _, err := getWith(t, client(nil, false), "https://"+addr+"/", "", ""); err == nil {
		t.Errorf("a certificate that does not match its key was served")
	}
}

// FuzzParseWebConfig: any file text is refused with an error or gives a
// configuration that passed every check; nothing panics.
func FuzzParseWebConfig(f *testing.F) {
	for _, s := range []string{
		"", "basic_auth_users:\n  a: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n",
		"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: c\n",
		"http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n",
		"rate_limit:\n  burst: 2\n  interval: 1s\n", "tls_server_config: [\n", "a: &x [*x]\n", "{tls_server_config: {min_version: TLS13}}",
		"tls_server_config:\n  cert: |\n    x\n  key: y\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n  curve_preferences: [X25519]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseWebConfig([]byte(s))
		if err != nil {
			if !strings.Contains(err.Error(), "YAML") && !strings.Contains(err.Error(), ":") {
				t.Fatalf("unclear error %q", err)
			}
			return
		}
		for name, h := range c.Users {
			if _, err := bcrypt.Cost([]byte(h)); err != nil {
				t.Fatalf("user %q accepted with a hash that is not bcrypt", name)
			}
		}
		if c.Rate.Interval > 0 && c.Rate.Burst < 1 {
			t.Fatalf("rate limit %+v accepted", c.Rate)
		}
		if c.TLS.enabled() && ((c.TLS.CertFile == "" && c.TLS.Cert == "") || (c.TLS.KeyFile == "" && c.TLS.Key == "")) {
			t.Fatalf("TLS without a certificate or key accepted: %+v", c.TLS)
		}
		if c.TLS.minVersion > c.TLS.maxVersion {
			t.Fatalf("versions %x > %x accepted", c.TLS.minVersion, c.TLS.maxVersion)
		}
	})
}

// BenchmarkWebGuard is the cost the guard adds to a request with the
// right, cached credentials: a stat of the file and a keyed hash.
func BenchmarkWebGuard(b *testing.B) {
	path := filepath.Join(b.TempDir(), "web.yml")
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err := os.WriteFile(path, []byte("basic_auth_users:\n  prometheus: "+string(h)+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil { // not racily new: cached
		b.Fatal(err)
	}
	g := newWebGuard(path, okHandler(), slog.New(slog.DiscardHandler))
	req, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
	req.SetBasicAuth("prometheus", "pw")
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		g.ServeHTTP(w, req)
		if w.code != 0 && w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(c int)           { d.code = c }
