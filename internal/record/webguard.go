package record

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// webGuard applies a web configuration file to a server: basic auth, the
// extra headers and the rate limit on each request, TLS on each
// connection. The file is looked at again for each request and TLS
// handshake, and read again when it changed (its inode, size or
// modification time), so an edit applies without a restart; the certificate,
// key and client CA files are read for each handshake, so a renewed
// certificate is served at once.
type webGuard struct {
	path string
	next http.Handler
	log  *slog.Logger

	mu   sync.Mutex
	stat fileStamp
	cur  *guardConfig // nil until read, or after a failed read
	cur0 *guardConfig // the last good read, for its rate limit's state
	// lastErr is the last read's error, logged once per change.
	lastErr string

	// bcryptMu makes bcrypt checks one at a time: each costs tens to
	// hundreds of milliseconds of CPU, and a client trying passwords must
	// not take every CPU the recorder has.
	bcryptMu sync.Mutex
	cache    authCache
}

// guardConfig is one reading of the file.
type guardConfig struct {
	*webConfig
	users []guardUser
	limit *tokenBucket // nil without rate_limit
}

// guardUser is a basic auth user: the hash of the name, compared in
// constant time, and the bcrypt hash of the password.
type guardUser struct {
	nameSum [sha256.Size]byte
	hash    []byte
}

// fileStamp identifies a version of a file without reading it.
type fileStamp struct {
	ino   uint64
	size  int64
	mtime int64
}

// racyWindow is how recent a modification time is not trusted: the
// kernel stamps files with a coarse clock, so two writes of the same size
// a few milliseconds apart can share a time. A file changed this recently
// is read again on every look.
const racyWindow = 2 * time.Second

// unknownUserHash is a bcrypt hash (cost 10) of a random password no one
// knows: a request naming an unknown user is checked against it, so it
// takes as long as one with a known user and a wrong password.
const unknownUserHash = "$2a$10$Gi3qlXGGm0G9/5Y/xXMwx.Uqj5a/XEZGGsCVECS/CW6Sc6vh8FTFS"

func newWebGuard(path string, next http.Handler, log *slog.Logger) *webGuard {
	g := &webGuard{path: path, next: next, log: log}
	g.cache.init()
	return g
}

// config returns the file's current configuration, reading it again if it
// changed.
func (g *webGuard) config() (*guardConfig, error) {
	st, statErr := stampOf(g.path)
	g.mu.Lock()
	defer g.mu.Unlock()
	if statErr == nil && g.cur != nil && st == g.stat && time.Since(time.Unix(0, st.mtime)) > racyWindow {
		return g.cur, nil
	}
	g.cur = nil
	c, err := readWebConfig(g.path)
	if err != nil {
		if msg := err.Error(); msg != g.lastErr {
			g.lastErr = msg
			g.log.Warn("the web configuration file no longer reads: refusing requests until it is fixed", "file", g.path, "err", msg)
		}
		return nil, err
	}
	g.lastErr = ""
	gc := &guardConfig{webConfig: c}
	for name, hash := range c.Users {
		gc.users = append(gc.users, guardUser{nameSum: sha256.Sum256([]byte(name)), hash: []byte(hash)})
	}
	switch {
	case c.Rate.Interval <= 0:
	case g.cur0 != nil && g.cur0.limit != nil && g.cur0.Rate == c.Rate:
		gc.limit = g.cur0.limit // the same limit: its bucket goes on
	default:
		gc.limit = newTokenBucket(c.Rate.Burst, c.Rate.Interval)
	}
	g.cur, g.cur0, g.stat = gc, gc, st
	return gc, nil
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino // a file replaced by a rename has another
	}
	return s, nil
}

// ServeHTTP checks a request against the file: 500 when the file no
// longer reads, 429 past the rate limit, 401 with WWW-Authenticate without
// a right user and password.
func (g *webGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := g.config()
	if err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	if c.limit != nil && !c.limit.allow(time.Now()) {
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	for k, v := range c.HTTP.Headers {
		w.Header().Set(k, v)
	}
	if len(c.users) == 0 {
		g.next.ServeHTTP(w, r)
		return
	}
	if user, pass, ok := r.BasicAuth(); ok && g.allowed(c, user, pass) {
		g.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="memdoctor", charset="UTF-8"`)
	http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
}

// allowed checks a user and password. The user is looked up in constant
// time over all users, an unknown user costs a bcrypt check like a known
// one, and the answer for a user, hash and password is remembered (under
// a keyed hash, never the password itself), so a scraper sending the same
// credentials every 15 s costs one bcrypt check in all.
func (g *webGuard) allowed(c *guardConfig, user, pass string) bool {
	sum := sha256.Sum256([]byte(user))
	hash := []byte(unknownUserHash)
	known := 0
	for _, u := range c.users {
		eq := subtle.ConstantTimeCompare(sum[:], u.nameSum[:])
		known |= eq
		if eq == 1 {
			hash = u.hash
		}
	}
	key := g.cache.key(user, hash, pass)
	if ok, found := g.cache.get(key); found {
		return ok && known == 1
	}
	g.bcryptMu.Lock()
	err := bcrypt.CompareHashAndPassword(hash, []byte(pass))
	g.bcryptMu.Unlock()
	ok := known == 1 && err == nil
	g.cache.set(key, ok)
	return ok
}

// tlsConfig is the server's GetConfigForClient: the file and the
// certificates as they are now.
func (g *webGuard) tlsConfig(http2 bool) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	return func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := g.config()
		if err != nil {
			return nil, err
		}
		cfg, err := c.TLS.loadTLS()
		if err != nil {
			return nil, err // the server logs it with the client's address
		}
		cfg.NextProtos = []string{"http/1.1"}
		if http2 {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		}
		return cfg, nil
	}
}

// authCache remembers the outcome of bcrypt checks, by a keyed hash of
// the user, the stored hash and the password given; the key is random for
// each run, so the cache holds nothing that tells a password.
type authCache struct {
	mu     sync.Mutex
	secret [32]byte
	m      map[[sha256.Size]byte]bool
}

// authCacheSize bounds the cache: a few scrapers and browsers need a
// handful of entries; a client trying passwords fills it and then
// replaces entries.
const authCacheSize = 128

func (a *authCache) init() {
	_, _ = rand.Read(a.secret[:]) // crypto/rand never fails on Linux
	a.m = make(map[[sha256.Size]byte]bool)
}

func (a *authCache) key(user string, hash []byte, pass string) [sha256.Size]byte {
	h := hmac.New(sha256.New, a.secret[:])
	for _, part := range [][]byte{[]byte(user), hash, []byte(pass)} {
		var n [8]byte
		for i := range n {
			n[i] = byte(len(part) >> (8 * i))
		}
		h.Write(n[:]) // lengths first: parts cannot run into each other
		h.Write(part)
	}
	var k [sha256.Size]byte
	copy(k[:], h.Sum(nil))
	return k
}

func (a *authCache) get(k [sha256.Size]byte) (ok, found bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok, found = a.m[k]
	return ok, found
}

func (a *authCache) set(k [sha256.Size]byte, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) >= authCacheSize {
		// Drop an eighth, whichever the map's random order gives first.
		n := authCacheSize / 8
		for old := range a.m {
			delete(a.m, old)
			if n--; n == 0 {
				break
			}
		}
	}
	a.m[k] = ok
}

// tokenBucket lets burst requests through at once, then one per every.
type tokenBucket struct {
	mu     sync.Mutex
	tokens float64
	burst  float64
	every  time.Duration
	last   time.Time
}

func newTokenBucket(burst int, every time.Duration) *tokenBucket {
	return &tokenBucket{tokens: float64(burst), burst: float64(burst), every: every}
}

func (b *tokenBucket) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+float64(now.Sub(b.last))/float64(b.every))
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
