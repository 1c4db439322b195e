package record

// Who may read the recorder. /metrics carries what only root can read on
// the host (/proc/slabinfo is mode 0400; other users' processes' PSS and
// USS come from their smaps_rollup, which needs ptrace access), and the
// live page the same as a report: anyone who can connect reads it. Three
// answers, as other Prometheus exporters give them: a unix socket whose
// file mode says who connects (ListenUnix), TLS and basic auth from a
// web configuration file in the exporter-toolkit's format
// (ServerOptions.WebConfigFile), and, for a TCP listener, a Host check
// (HostGuard) that keeps a web page from reaching a loopback recorder
// through a name it rebinds to 127.0.0.1.

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
)

// HostGuard serves h to requests whose Host is an IP address, localhost,
// or one of allowed (any case; "*" allows every name), and answers others
// 421 Misdirected Request. A browser sends the name of the page's origin:
// a page on a name its owner made resolve to 127.0.0.1 (DNS rebinding)
// would otherwise read the recorder through the browser of a user of this
// host, as its own origin.
func HostGuard(h http.Handler, allowed []string) http.Handler {
	names := map[string]bool{"localhost": true}
	for _, a := range allowed {
		if a == "*" {
			return h
		}
		names[normHost(a)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, names) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = fmt.Fprintf(w, "memdoctor record answers requests for an IP address or localhost, not for %q: "+
				"use the address, or start the recorder with --allow-host NAME for a name of this host\n", r.Host)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostAllowed tells whether a request's Host header (with or without a
// port) names an IP address or one of names. An empty Host (HTTP/1.0) is
// no browser's.
func hostAllowed(host string, names map[string]bool) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return names[normHost(host)]
}

// normHost returns a host name in lower case without a final dot.
func normHost(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

// UnixSocket says how ListenUnix makes its socket.
type UnixSocket struct {
	// Path of the socket; what is there is replaced only when it is a
	// socket nobody listens on.
	Path string
	// GID, when not negative, is the socket's group: it is then mode 0660
	// (the group may connect); otherwise 0600 (the owner only).
	GID int
}

// Mode is the socket's permission bits.
func (u UnixSocket) Mode() fs.FileMode {
	if u.GID >= 0 {
		return 0o660
	}
	return 0o600
}

// ListenUnix listens on a unix socket created with u.Mode() from the start
// (the umask is set around bind, so no other user can connect in between)
// and, with u.GID, given that group without following a link. It refuses
// to replace a file that is not a socket, or a socket something answers
// on. The socket is removed when the listener closes.
func ListenUnix(u UnixSocket) (net.Listener, error) {
	if u.Path == "" {
		return nil, errors.New("no socket path")
	}
	if fi, err := os.Lstat(u.Path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket (%s): memdoctor replaces only a socket; remove it or choose another path", u.Path, fileKind(fi.Mode()))
		}
		if c, err := net.DialTimeout("unix", u.Path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s: something already listens on this socket (another recorder?): stop it or choose another path", u.Path)
		}
		if err := os.Remove(u.Path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", u.Path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	old := syscall.Umask(0o777 &^ int(u.Mode()))
	ln, err := net.Listen("unix", u.Path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if u.GID >= 0 {
		if err := os.Lchown(u.Path, -1, u.GID); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("giving %s to group %d: %w", u.Path, u.GID, err)
		}
	}
	return ln, nil
}

// fileKind names a file type for a message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
