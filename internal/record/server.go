package record

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ServerOptions bounds what HTTP clients can hold of the recorder: its
// memory (a connection costs about 20 KiB: a goroutine and two buffers) and
// its file descriptors, which collection needs (/proc, the store, scrapes).
type ServerOptions struct {
	// MaxConns is how many connections are open at once. Past it, a new
	// connection closes the one that has waited longest without a request
	// (idle keep-alive, or opened and silent); when every connection is
	// being answered, the new one is closed at once.
	MaxConns int
	// ReadHeaderTimeout bounds the wait for a request's headers,
	// ReadTimeout the whole request, WriteTimeout the answer (the live page
	// extends its own: it may have to be rendered), IdleTimeout a
	// keep-alive connection between requests.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// WebConfigFile, when set, is a web configuration file in the
	// Prometheus exporter-toolkit's format (tls_server_config,
	// basic_auth_users with bcrypt hashes, http_server_config, rate_limit):
	// TLS and basic auth for every request. It is looked at again for each
	// request and TLS connection and read again when it changed, so a
	// changed file applies without a restart (see webGuard).
	WebConfigFile string
	// HostCheck answers 421 to requests whose Host is not an IP address,
	// localhost or one of AllowHosts (see HostGuard): for TCP listeners,
	// which a browser can reach.
	HostCheck  bool
	AllowHosts []string
	// Log receives the server's warnings (a web configuration file that
	// no longer parses); nil discards them.
	Log io.Writer
}

// Limits of the recorder's server.
const (
	// maxConns caps the connections: Prometheus servers, a few browsers.
	maxConns = 256
	// fdReserve is how many file descriptors are kept for collection,
	// the store and the page's child process, whatever the clients do.
	fdReserve = 128
)

// DefaultServerOptions returns the limits for /metrics and the live page,
// with the connection limit chosen well below the open-file limit.
func DefaultServerOptions() ServerOptions {
	return ServerOptions{
		MaxConns:          MaxConnsFor(NoFileLimit()),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second, // above Prometheus' usual 1 min scrape interval
		HostCheck:         true,
	}
}

// MaxConnsFor returns the connection limit for an open-file limit: at most
// half of what is left after the reserve, at most maxConns, at least 4.
func MaxConnsFor(nofile uint64) int {
	n := maxConns
	if nofile < uint64(fdReserve+2*maxConns) {
		n = (int(nofile) - fdReserve) / 2
	}
	return max(n, 4)
}

// RaiseNoFile raises the soft open-file limit to the hard one (the Go
// runtime does so too at start; this says it) and returns the soft limit.
func RaiseNoFile() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	if rl.Cur < rl.Max {
		up := rl
		up.Cur = up.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up) == nil {
			rl = up
		}
	}
	return rl.Cur
}

// NoFileLimit returns the soft open-file limit (1024 if unknown).
func NoFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	return rl.Cur
}

// Server is an http.Server behind a listener that enforces
// ServerOptions.MaxConns.
type Server struct {
	*http.Server
	ln  *connLimiter
	web string
	log *slog.Logger
}

// NewServer serves h on ln within the limits of o.
func NewServer(ln net.Listener, h http.Handler, o ServerOptions) *Server {
	cl := &connLimiter{Listener: ln, max: max(o.MaxConns, 1), conns: map[*trackedConn]struct{}{}}
	if o.HostCheck {
		h = HostGuard(h, o.AllowHosts)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    16 << 10, // GET /metrics needs a few hundred bytes
		ConnState:         cl.track,
	}
	logger := slog.New(slog.DiscardHandler)
	if o.Log != nil {
		logger = slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
		srv.ErrorLog = log.New(o.Log, "", 0)
	}
	return &Server{Server: srv, ln: cl, web: o.WebConfigFile, log: logger}
}

// Serve accepts connections until Shutdown or Close; with a web
// configuration file, with its TLS and basic auth (see webGuard).
func (s *Server) Serve() error {
	if s.web == "" {
		return s.Server.Serve(s.ln)
	}
	c, err := readWebConfig(s.web)
	if err != nil {
		return webConfigError(s.web, err)
	}
	next := s.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	g := newWebGuard(s.web, next, s.log)
	s.Handler = g
	if !c.TLS.enabled() {
		return s.Server.Serve(s.ln)
	}
	if _, err := c.TLS.loadTLS(); err != nil {
		return webConfigError(s.web, err)
	}
	if !c.http2() {
		s.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){} // no h2
	}
	s.TLSConfig = &tls.Config{GetConfigForClient: g.tlsConfig(c.http2())}
	return s.ServeTLS(s.ln, "", "")
}

// CheckWebConfig reads a web configuration file as Serve will, and says
// what is wrong with it: its YAML, an unknown field, a user's password
// hash, a certificate or key that cannot be read or does not match.
func CheckWebConfig(path string) error {
	c, err := readWebConfig(path)
	if err == nil && c.TLS.enabled() {
		_, err = c.TLS.loadTLS()
	}
	if err != nil {
		return webConfigError(path, err)
	}
	return nil
}

func webConfigError(path string, err error) error {
	return fmt.Errorf("--web.config.file %s: %w (the format is the Prometheus exporter-toolkit's: tls_server_config with cert_file and key_file, basic_auth_users with bcrypt hashes; see docs/metrics.md)", path, err)
}

// Conns returns the connections open now, and how many were closed to make
// room for others (evicted) or refused because all were busy.
func (s *Server) Conns() (open int, evicted, refused int64) {
	s.ln.mu.Lock()
	open = len(s.ln.conns)
	s.ln.mu.Unlock()
	return open, s.ln.evicted.Load(), s.ln.refused.Load()
}

// connLimiter is a listener that holds at most max connections.
type connLimiter struct {
	net.Listener
	max     int
	mu      sync.Mutex
	conns   map[*trackedConn]struct{}
	evicted atomic.Int64
	refused atomic.Int64
}

// trackedConn is a connection with the server's view of it.
type trackedConn struct {
	net.Conn
	l     *connLimiter
	state http.ConnState // guarded by l.mu
	since time.Time      // when it entered state; guarded by l.mu
	once  sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.forget(c) })
	return c.Conn.Close()
}

func (l *connLimiter) forget(c *trackedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, l: l, state: http.StateNew, since: time.Now()}
		var victim *trackedConn
		l.mu.Lock()
		if len(l.conns) >= l.max {
			victim = l.longestWaitingLocked()
			if victim == nil {
				l.mu.Unlock()
				l.refused.Add(1)
				_ = c.Close()
				continue
			}
			delete(l.conns, victim)
		}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			_ = victim.Close() // its server goroutine sees the close and ends
		}
		return tc, nil
	}
}

// longestWaitingLocked returns the connection that has waited longest
// without a request in progress, or nil.
func (l *connLimiter) longestWaitingLocked() *trackedConn {
	var v *trackedConn
	for c := range l.conns {
		if c.state != http.StateNew && c.state != http.StateIdle {
			continue
		}
		if v == nil || c.since.Before(v.since) {
			v = c
		}
	}
	return v
}

// track is the server's ConnState hook.
func (l *connLimiter) track(c net.Conn, s http.ConnState) {
	if tlsc, ok := c.(*tls.Conn); ok {
		c = tlsc.NetConn() // TLS: the connection the listener accepted
	}
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, tc)
	default:
		tc.state, tc.since = s, time.Now()
	}
}
