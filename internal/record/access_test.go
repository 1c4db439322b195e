package record

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Host names a rebinding page would send are refused; addresses, localhost
// and the allowed names pass, with or without a port, in any case.
func TestHostGuard(t *testing.T) {
	h := HostGuard(okHandler(), []string{"Metrics.Example."})
	for host, want := range map[string]int{
		"127.0.0.1:9105":               http.StatusOK,
		"10.1.2.3":                     http.StatusOK,
		"[::1]:9105":                   http.StatusOK,
		"[fe80::1%25eth0]:9105":        http.StatusOK,
		"localhost:9105":               http.StatusOK,
		"LocalHost.":                   http.StatusOK,
		"metrics.example:9105":         http.StatusOK,
		"METRICS.EXAMPLE.":             http.StatusOK,
		"":                             http.StatusOK,
		"attacker.example:9105":        http.StatusMisdirectedRequest,
		"localhost.attacker.example":   http.StatusMisdirectedRequest,
		"127.0.0.1.attacker.example":   http.StatusMisdirectedRequest,
		"metrics.example.attacker.net": http.StatusMisdirectedRequest,
		"0x7f000001":                   http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Host = "anything.example"
	rec := httptest.NewRecorder()
	HostGuard(okHandler(), []string{"*"}).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("--allow-host '*': %d", rec.Code)
	}
}

// ListenUnix makes the socket with its mode from the start, replaces only a
// socket nobody listens on, and removes it when closed.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.sock")
	ln, err := ListenUnix(UnixSocket{Path: p, GID: -1})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	srv := NewServer(ln, okHandler(), ServerOptions{MaxConns: 4})
	go func() { _ = srv.Serve() }()
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	b, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(b), "ok") {
		t.Errorf("no answer on the socket: %q", b)
	}
	if _, err := ListenUnix(UnixSocket{Path: p, GID: -1}); err == nil || !strings.Contains(err.Error(), "already listens") {
		t.Errorf("a live socket was taken over: %v", err)
	}
	_ = srv.Close()
	if _, err := os.Lstat(p); err == nil {
		t.Error("the socket outlives its listener")
	}
	// A stale socket (its listener gone without removing it) is replaced,
	// with the group's mode.
	l2, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	l2.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l2.Close()
	ln, err = ListenUnix(UnixSocket{Path: p, GID: os.Getegid()})
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("with a group: %v, %v; want 0660", fi.Mode(), err)
	}
	_ = ln.Close()
	for name, make := range map[string]func(string) error{
		"a regular file":    func(p string) error { return os.WriteFile(p, []byte("x"), 0o600) },
		"a directory":       func(p string) error { return os.Mkdir(p, 0o700) },
		"a symbolic link":   func(p string) error { return os.Symlink(filepath.Join(dir, "elsewhere"), p) },
		"a dangling target": func(p string) error { return os.Symlink("/nonexistent/x.sock", p) },
	} {
		q := filepath.Join(t.TempDir(), "x.sock")
		if err := make(q); err != nil {
			t.Fatal(err)
		}
		if _, err := ListenUnix(UnixSocket{Path: q, GID: -1}); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Lstat(q); err != nil {
			t.Errorf("%s was removed", name)
		}
	}
}
