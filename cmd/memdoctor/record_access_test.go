package main

// Who can read the recorder: /metrics carries root-only data (slabinfo,
// other users' processes' PSS), so it can be kept to root (a unix socket
// of mode 0600), to a group (0660), or to Prometheus servers with a
// password over TLS (--web.config.file); and no web page reaches a
// loopback recorder through a name it rebinds to 127.0.0.1.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// launchRecorder starts `memdoctor record` with args and returns without
// waiting for it to serve.
func launchRecorder(t *testing.T, args ...string) *recorder {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "record-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), append([]string{"record", "--top", "10", "--interval", "500ms", "--force-interval"}, args...)...)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return &recorder{cmd: cmd, log: logf}
}

// worldDir returns a new directory every user may enter (t.TempDir is
// 0700: nobody else could reach a socket in it, whatever its mode).
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "memdoctor-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// curlAs runs curl as uid:gid (a real unprivileged user) and returns its
// output and exit code.
func curlAs(t *testing.T, uid, gid uint32, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (make test-deps)")
	}
	cmd := exec.Command("curl", append([]string{"-sS", "--max-time", "10"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, NoSetGroups: false}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// waitFor polls ok every 100 ms for up to d.
func waitFor(t *testing.T, r *recorder, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not within %v\nlog:\n%s", what, d, r.logText())
		}
	}
}

// On a unix socket of mode 0600 only root reads /metrics: uid 65534 is
// refused by the kernel. With --listen-group, the group reads it too.
// What is at the path is replaced only when it is a dead socket.
func TestRecordUnixSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the socket's owner must differ from the attacker")
	}
	dir := worldDir(t)
	sock := filepath.Join(dir, "record.sock")
	for _, c := range []struct {
		group    string
		mode     os.FileMode
		nobodyIn bool
	}{{"", 0o600, false}, {"65534", 0o660, true}} {
		args := []string{"--db", filepath.Join(t.TempDir(), "md.db"), "--listen", "unix:" + sock}
		if c.group != "" {
			args = append(args, "--listen-group", c.group)
		}
		r := launchRecorder(t, args...)
		waitFor(t, r, 20*time.Second, "root reads /metrics with node_slabinfo through the socket", func() bool {
			out, code := curlAs(t, 0, 0, "--unix-socket", sock, "http://localhost/metrics")
			return code == 0 && strings.Contains(out, "node_memory_MemTotal_bytes")
		})
		fi, err := os.Lstat(sock)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != c.mode || st.Uid != 0 || (c.group != "" && st.Gid != 65534) {
			t.Errorf("--listen-group %q: socket %v uid %d gid %d, want mode %v owned by root", c.group, fi.Mode(), st.Uid, st.Gid, c.mode)
		}
		out, code := curlAs(t, 65534, 65534, "--unix-socket", sock, "http://localhost/metrics")
		if got := code == 0 && strings.Contains(out, "node_memory_MemTotal_bytes"); got != c.nobodyIn {
			t.Errorf("--listen-group %q: uid 65534 reads /metrics: %v, want %v (curl exit %d: %.200s)", c.group, got, c.nobodyIn, code, out)
		}
		// A second recorder does not take over the live socket.
		_, errOut, code2 := runBinary(t, "record", "--db", filepath.Join(t.TempDir(), "md2.db"), "--listen", "unix:"+sock)
		if code2 == 0 || !strings.Contains(errOut, "already listens") {
			t.Errorf("a second recorder on the live socket: exit %d, %q", code2, errOut)
		}
		r.stop(t)
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("the socket outlives the recorder")
		}
	}
	// Nothing but a socket is replaced: a file, a link to one, a directory.
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{target, link, dir} {
		_, errOut, code := runBinary(t, "record", "--db", filepath.Join(t.TempDir(), "md.db"), "--listen", "unix:"+p)
		if code == 0 || !strings.Contains(errOut, "is not a socket") {
			t.Errorf("--listen unix:%s: exit %d, %q", p, code, errOut)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me" {
		t.Errorf("the file behind the path was changed: %q, %v", b, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link was replaced: %v", err)
	}
}

// runBinary runs the memdoctor binary and returns its output and exit code
// (within 30 s).
func runBinary(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("%v did not end within 30 s", args)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// A page on a name its owner points at 127.0.0.1 (DNS rebinding) sends
// that name as Host: refused with 421, while addresses, localhost and the
// names given with --allow-host are served.
func TestRecordHostCheck(t *testing.T) {
	addr := freeAddr(t)
	r := launchRecorder(t, "--db", filepath.Join(t.TempDir(), "md.db"), "--listen", addr, "--allow-host", "Metrics.Internal")
	r.addr = addr
	r.waitHealthy(t, 20*time.Second)
	_, port, _ := net.SplitHostPort(addr)
	for host, want := range map[string]int{
		"rebind.attacker.example:" + port: http.StatusMisdirectedRequest,
		"rebind.attacker.example":         http.StatusMisdirectedRequest,
		"localhost.attacker.example":      http.StatusMisdirectedRequest,
		"127.0.0.1:" + port:               http.StatusOK,
		"[::1]:" + port:                   http.StatusOK,
		"localhost:" + port:               http.StatusOK,
		"LOCALHOST.":                      http.StatusOK,
		"metrics.internal:" + port:        http.StatusOK,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
		if want != http.StatusOK && (strings.Contains(string(body), "node_") || !strings.Contains(string(body), "--allow-host")) {
			t.Errorf("Host %s: the refusal serves metrics or does not say what to do: %.200s", host, body)
		}
	}
	r.stop(t)
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "memdoctor test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// --web.config.file in the exporter-toolkit's format: TLS and basic auth.
// Without the password (uid 65534's curl, or Go's client) /metrics is
// refused; plain HTTP gets no metrics; a real Prometheus configured with
// basic_auth and tls_config scrapes it. A broken file stops the recorder
// at start with what to fix.
func TestRecordWebConfig(t *testing.T) {
	dir := worldDir(t)
	certFile, keyFile := selfSigned(t, dir)
	const password = "correct horse battery"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n",
		certFile, keyFile, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"basic_auth_users:\n  prometheus: not-a-hash\n", "basic_auth_users"},
		{"tls_server_config:\n  cert_file: " + filepath.Join(dir, "missing.pem") + "\n  key_file: " + keyFile + "\n", "missing.pem"},
		{"tls_server_config: [\n", "yaml"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.yml")
		if err := os.WriteFile(bad, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runBinary(t, "record", "--db", filepath.Join(t.TempDir(), "md.db"), "--listen", freeAddr(t), "--web.config.file", bad)
		if code == 0 || !strings.Contains(errOut, "--web.config.file") || !strings.Contains(strings.ToLower(errOut), c.want) {
			t.Errorf("web config %q: exit %d, %q", c.yaml, code, errOut)
		}
	}

	addr := freeAddr(t)
	r := launchRecorder(t, "--db", filepath.Join(t.TempDir(), "md.db"), "--listen", addr, "--web.config.file", webConfig)
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	get := func(scheme, user, pass string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, r, 20*time.Second, "/metrics over TLS with the password", func() bool {
		code, body := get("https", "prometheus", password)
		return code == http.StatusOK && strings.Contains(body, "node_memory_MemTotal_bytes")
	})
	for _, c := range []struct {
		scheme, user, pass string
		want               int
	}{
		{"https", "", "", http.StatusUnauthorized},
		{"https", "prometheus", "wrong", http.StatusUnauthorized},
		{"https", "root", password, http.StatusUnauthorized},
		{"http", "prometheus", password, http.StatusBadRequest}, // Go's TLS server to a plain request
	} {
		if code, body := get(c.scheme, c.user, c.pass); code != c.want || strings.Contains(body, "node_") {
			t.Errorf("%s as %q/%q: %d, want %d without metrics", c.scheme, c.user, c.pass, code, c.want)
		}
	}
	if os.Geteuid() == 0 {
		// Another user of the host, with curl: refused without the password.
		out, _ := curlAs(t, 65534, 65534, "--cacert", certFile, "-w", "%{http_code}", "-o", "/dev/null", "https://"+addr+"/metrics")
		if strings.TrimSpace(out) != "401" {
			t.Errorf("uid 65534 without the password: %q, want 401", out)
		}
		out, _ = curlAs(t, 65534, 65534, "--cacert", certFile, "-u", "prometheus:"+password, "https://"+addr+"/metrics")
		if !strings.Contains(out, "node_memory_MemTotal_bytes") {
			t.Errorf("uid 65534 with the password: %.200s", out)
		}
	}
	scrapeWithPrometheus(t, addr, certFile, password)
	r.stop(t)
}

// scrapeWithPrometheus runs Debian's prometheus on loopback, configured to
// scrape the recorder at addr over TLS with basic auth, and waits for the
// target to be up with the recorder's series.
func scrapeWithPrometheus(t *testing.T, addr, caFile, password string) {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Log("prometheus is not installed (make test-deps): checked with Go's client and curl only")
		return
	}
	dir := t.TempDir()
	passFile := filepath.Join(dir, "password")
	if err := os.WriteFile(passFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: memdoctor
    scheme: https
    basic_auth:
      username: prometheus
      password_file: %s
    tls_config:
      ca_file: %s
    static_configs:
      - targets: ['%s']
`, passFile, caFile, addr)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	web := freeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config.file", cfgFile, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", web)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_, _ = cmd.Process.Wait()
	}()
	query := func(q string) []json.RawMessage {
		resp, err := http.Get("http://" + web + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var ans struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&ans) != nil {
			return nil
		}
		return ans.Data.Result
	}
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if len(query(`up{job="memdoctor"} == 1`)) == 1 && len(query(`node_memory_MemTotal_bytes{job="memdoctor"}`)) == 1 {
			t.Logf("%s scraped the recorder over TLS with basic auth", bin)
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus did not scrape the recorder over TLS with basic auth within 40 s; targets: %v\n%s",
				query(`up`), log)
		}
	}
}
