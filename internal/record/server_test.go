package record

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// serve starts a Server on a loopback port with h and o.
func serve(t *testing.T, h http.Handler, o ServerOptions) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln, h, o)
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, ln.Addr().String()
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
}

// keepAlive opens a connection, makes one keep-alive request on it and
// leaves it open, idle.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.Close {
		t.Fatal("the server did not keep the connection alive")
	}
	return c
}

// closedByServer reports whether the server closed c within d.
func closedByServer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// TestServerClosesIdleConnections: keep-alive connections idle past
// IdleTimeout, and connections that never send a request past
// ReadHeaderTimeout, are closed by the server.
func TestServerClosesIdleConnections(t *testing.T) {
	srv, addr := serve(t, okHandler(), ServerOptions{MaxConns: 100, ReadHeaderTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, IdleTimeout: 400 * time.Millisecond})
	var idle, silent []net.Conn
	for range 10 {
		idle = append(idle, keepAlive(t, addr))
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	defer func() {
		for _, c := range append(idle, silent...) {
			_ = c.Close()
		}
	}()
	// Still open well before the timeouts.
	if closedByServer(idle[0], 100*time.Millisecond) {
		t.Fatal("an idle connection was closed before IdleTimeout")
	}
	for i, c := range idle {
		if !closedByServer(c, 3*time.Second) {
			t.Errorf("idle keep-alive connection %d still open 3 s after a 400 ms IdleTimeout", i)
		}
	}
	for i, c := range silent {
		if !closedByServer(c, 3*time.Second) {
			t.Errorf("silent connection %d still open 3 s after a 300 ms ReadHeaderTimeout", i)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if open, _, _ := srv.Conns(); open == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	open, _, _ := srv.Conns()
	t.Errorf("the server still counts %d open connections after all were closed", open)
}

// TestServerConnectionLimit: past MaxConns, new connections close the ones
// that waited longest, so the server never holds more than MaxConns, and a
// client asking for /metrics is still answered.
func TestServerConnectionLimit(t *testing.T) {
	const limit = 8
	srv, addr := serve(t, okHandler(), ServerOptions{MaxConns: limit, ReadHeaderTimeout: time.Minute,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: time.Minute})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range 60 {
		if i%2 == 0 {
			conns = append(conns, keepAlive(t, addr))
		} else {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		if open, _, _ := srv.Conns(); open > limit {
			t.Fatalf("%d connections open, limit %d", open, limit)
		}
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("/metrics under a connection flood: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(b) != "ok\n" {
		t.Fatalf("/metrics answered %q", b)
	}
	// The oldest were closed by the server; the newest are still open.
	if !closedByServer(conns[0], 2*time.Second) {
		t.Error("the oldest idle connection was not closed to make room")
	}
	if closedByServer(conns[len(conns)-1], 200*time.Millisecond) {
		t.Error("the newest connection was closed")
	}
	_, evicted, _ := srv.Conns()
	if evicted < int64(len(conns)-limit) {
		t.Errorf("%d connections evicted, want at least %d", evicted, len(conns)-limit)
	}
}

func TestMaxConnsFor(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		want   int
	}{{1 << 20, maxConns}, {1024, maxConns}, {512, (512 - fdReserve) / 2}, {64, 4}} {
		if got := MaxConnsFor(c.nofile); got != c.want {
			t.Errorf("MaxConnsFor(%d) = %d, want %d", c.nofile, got, c.want)
		}
		if got := MaxConnsFor(c.nofile); c.nofile >= fdReserve+8 && uint64(got+fdReserve) > c.nofile {
			t.Errorf("MaxConnsFor(%d) = %d leaves less than the %d descriptors reserved", c.nofile, got, fdReserve)
		}
	}
}

// TestLivePageOutlivesWriteTimeout: the live page may have to be rendered
// before it is sent, longer than the WriteTimeout that bounds /metrics; it
// is still delivered.
func TestLivePageOutlivesWriteTimeout(t *testing.T) {
	r, err := New(Config{DBPath: filepath.Join(t.TempDir(), "md.db"), Interval: time.Second,
		Page: func(w io.Writer, _ string) error {
			time.Sleep(600 * time.Millisecond) // a long rendering
			_, err := io.WriteString(w, "<html>the report</html>")
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := r.NewServer(ln, ServerOptions{MaxConns: 8, ReadHeaderTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: 200 * time.Millisecond, IdleTimeout: time.Second})
	go func() { _ = srv.Serve() }()
	defer srv.Close()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("the live page after a 600 ms rendering with a 200 ms WriteTimeout: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "<html>the report</html>" {
		t.Fatalf("GET /: %d %q", resp.StatusCode, b)
	}
}
