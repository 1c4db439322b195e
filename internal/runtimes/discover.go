package runtimes

// Metrics a process already serves: for a process whose runtime was
// detected but whose garbage collector is not visible, memdoctor looks at
// the TCP sockets the process itself listens on, keeps those reachable on
// loopback from memdoctor's own network namespace, and asks each for
// /metrics once: a GET for the text format, no credentials, no redirect
// followed, a short deadline and a small page bound. The first page that
// names the process' own runtime is its reading, named by its URL.
//
// Only the process' own descriptors count (a port another process owns is
// not its metrics), and only in memdoctor's network namespace: a container
// in its own namespace has its own loopback, which 127.0.0.1 here is not;
// memdoctor enters no namespace and says to pass the URL with --scrape.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// DiscoverUserAgent names discovery's requests in the services' logs.
const DiscoverUserAgent = "memdoctor-discover"

const (
	// DiscoverTimeout bounds each request of discovery: a runtime's page
	// on loopback answers in a few milliseconds.
	DiscoverTimeout = 300 * time.Millisecond
	// discoverBudget bounds discovery as a whole, however many processes
	// and ports there are.
	discoverBudget = 2 * time.Second
	// discoverPage bounds a discovered page as read (a runtime's page is a
	// few KiB; an application's own series can make it a few MiB; only the
	// runtime's series are kept).
	discoverPage = 4 << 20
	// discoverPorts is as many ports of one process as are tried.
	discoverPorts = 4
	// discoverWorkers is as many processes as are asked at once: a server
	// on a loaded host takes tens of milliseconds to answer, mostly waiting
	// for a CPU, and each worker holds at most 64 KiB of the page and 1 MiB
	// of its runtime series.
	discoverWorkers = 16
	// discoverFDs is as many descriptors of one process as are looked at
	// (a listening socket is opened early, among the first descriptors).
	discoverFDs = 4096
)

// listenSock is a listening TCP socket (of /proc/net/tcp, or of the
// socket diagnostics).
type listenSock struct {
	ip    net.IP
	port  int
	inode uint64
}

// parseListening returns the listening sockets of a /proc/PID/net/tcp or
// tcp6 table.
func parseListening(b []byte) []listenSock {
	var out []listenSock
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 || f[3] != tcpListen {
			continue
		}
		a, p, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(p, 16, 16)
		ip := parseProcAddr(a)
		ino, ierr := strconv.ParseUint(f[9], 10, 64)
		if err != nil || port == 0 || ip == nil || ierr != nil || ino == 0 {
			continue
		}
		out = append(out, listenSock{ip: ip, port: int(port), inode: ino})
	}
	return out
}

// loopbackURL is the /metrics URL that reaches a socket listening on ip
// from this host's loopback, or "" when none does (a socket bound to
// another address only).
func loopbackURL(ip net.IP, port int) string {
	var host string
	switch {
	case ip.To4() != nil && (ip.IsLoopback() || ip.IsUnspecified()):
		host = "127.0.0.1"
		if ip.IsLoopback() {
			host = ip.To4().String()
		}
	case ip.Equal(net.IPv6loopback) || ip.Equal(net.IPv6unspecified):
		host = "[::1]"
	default:
		return ""
	}
	return "http://" + host + ":" + strconv.Itoa(port) + "/metrics"
}

// socketInodes are the inodes of the sockets pid holds (its first
// discoverFDs descriptors).
func socketInodes(fsys procfs.FS, pid int) map[uint64]bool {
	dir := "proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := fsys.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[uint64]bool{}
	for i, fd := range fds {
		if i >= discoverFDs {
			break
		}
		l, err := fsys.ReadLink(dir + "/" + fd.Name())
		if err != nil {
			continue
		}
		if n, ok := strings.CutPrefix(l, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(n, "]"), 10, 64); err == nil {
				out[ino] = true
			}
		}
	}
	return out
}

// discoverer finds the metrics pages of processes.
type discoverer struct {
	fsys    procfs.FS
	scraper Scraper
	selfNS  string
	live    bool // fsys is this host's own /proc
	mu      sync.Mutex
	tables  map[string][]listenSock // by network namespace
	claimed map[uint64]int          // socket inode → the process it was tried for
}

func newDiscoverer(fsys procfs.FS) *discoverer {
	self, _ := fsys.ReadLink("proc/" + strconv.Itoa(os.Getpid()) + "/ns/net")
	tr := &http.Transport{
		Proxy:                  nil, // never through a proxy: the target is on this host
		DialContext:            (&net.Dialer{Timeout: DiscoverTimeout}).DialContext,
		DisableKeepAlives:      true,
		DisableCompression:     true, // a page on loopback: compressing it costs the target CPU for nothing
		MaxResponseHeaderBytes: 64 << 10,
		ResponseHeaderTimeout:  DiscoverTimeout,
	}
	d, live := fsys.Sys().(safeio.DirFS)
	return &discoverer{fsys: fsys, selfNS: self, live: live && d.Root() == "/", tables: map[string][]listenSock{}, claimed: map[uint64]int{},
		scraper: Scraper{Client: &http.Client{Transport: tr}, Timeout: DiscoverTimeout, MaxPage: discoverPage,
			NoRedirects: true, UserAgent: DiscoverUserAgent, RuntimeOnly: true}}
}

// table is the listening sockets of pid's network namespace ns, read once
// per namespace.
func (d *discoverer) table(pid int, ns string) []listenSock {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.tables[ns]; ok {
		return t
	}
	if ns == d.selfNS && d.live {
		if t, err := ownListening(); err == nil {
			d.tables[ns] = t
			return t
		}
	}
	var t []listenSock
	for _, name := range []string{"tcp", "tcp6"} {
		if b, err := d.fsys.ReadFile("proc/" + strconv.Itoa(pid) + "/net/" + name); err == nil {
			t = append(t, parseListening(b)...)
		}
	}
	d.tables[ns] = t
	return t
}

// listens returns the sockets pid itself listens on in memdoctor's network
// namespace, lowest port first, or a reason why none is asked. Safe for
// concurrent use.
func (d *discoverer) listens(pid int) ([]listenSock, string) {
	ns, err := d.fsys.ReadLink("proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil || d.selfNS == "" {
		return nil, "its network namespace cannot be read"
	}
	own := socketInodes(d.fsys, pid)
	if len(own) == 0 {
		return nil, ""
	}
	var mine []listenSock
	for _, s := range d.table(pid, ns) {
		if own[s.inode] {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return nil, ""
	}
	if ns != d.selfNS {
		return nil, "it listens in another network namespace (a container's), whose loopback memdoctor does not enter"
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].port < mine[j].port })
	return mine, ""
}

// claim returns the URLs at which the sockets pid listens on are reachable
// on loopback (at most discoverPorts), leaving out a socket claimed by a
// process before it (one it shares with a parent or a sibling worker, asked
// once). Not safe for concurrent use: called in the processes' order.
func (d *discoverer) claim(pid int, mine []listenSock) ([]string, string) {
	var urls []string
	for _, s := range mine {
		u := loopbackURL(s.ip, s.port)
		if u == "" || slices.Contains(urls, u) {
			continue
		}
		if other, ok := d.claimed[s.inode]; ok && other != pid {
			continue
		}
		d.claimed[s.inode] = pid
		urls = append(urls, u)
		if len(urls) == discoverPorts {
			break
		}
	}
	if len(urls) == 0 && len(mine) > 0 {
		return nil, "it listens on no loopback or wildcard address"
	}
	return urls, ""
}

// candidates is claim of listens.
func (d *discoverer) candidates(pid int) ([]string, string) {
	mine, why := d.listens(pid)
	if why != "" {
		return nil, why
	}
	return d.claim(pid, mine)
}

// discovery is what discovery made of one process.
type discovery struct {
	reading *Reading
	tried   []string // URLs asked that gave no reading of its runtime
	why     string   // why nothing was asked
}

// discover asks urls, the loopback ports of one process, for /metrics and
// returns the first page of the detected runtime.
func (d *discoverer) discover(ctx context.Context, det *Reading, urls []string, why string) discovery {
	out := discovery{why: why}
	for _, u := range urls {
		if ctx.Err() != nil {
			out.tried = append(out.tried, u+" (not asked: discovery's time was up)")
			continue
		}
		fams, err := d.scraper.Fetch(ctx, u)
		if err != nil {
			out.tried = append(out.tried, u+" ("+shortErr(err, u)+")")
			continue
		}
		rd, ok := Normalize(fams, u)
		if !ok {
			out.tried = append(out.tried, u+" (no runtime's GC metrics)")
			continue
		}
		if rd.Runtime != det.Runtime {
			// a proxy, or a sidecar's page: not this process' runtime
			out.tried = append(out.tried, fmt.Sprintf("%s (a %s runtime's page, not %s's)", u, rd.Runtime, det.Runtime))
			continue
		}
		rd.PID, rd.Comm, rd.Also = det.PID, det.Comm, det.Target
		if rd.Version == "" {
			rd.Version = det.Version
		}
		out.reading = rd
		return out
	}
	return out
}

// shortErr is a scrape error without the "scrape URL: " its Fetch puts
// first, and at most maxErr bytes of it (a parser's error quotes the
// page, which is the target's).
func shortErr(err error, u string) string {
	s := strings.TrimPrefix(err.Error(), "scrape "+u+": ")
	if len(s) > maxErr {
		s = strings.ToValidUTF8(s[:maxErr], "") + "..."
	}
	return s
}

// maxErr bounds what a note repeats of one failed request.
const maxErr = 200

// discoverAll runs discovery for the detected-only readings, at most
// discoverWorkers processes at a time and discoverBudget in all. A pid in
// served is asked at that URL alone, its sockets not read.
func discoverAll(ctx context.Context, fsys procfs.FS, dets []*Reading, memo *DiscoverMemo, served map[int]string) []discovery {
	out := make([]discovery, len(dets))
	if len(dets) == 0 {
		return out
	}
	d := newDiscoverer(fsys)
	// The sockets of each process (concurrently: /proc reads that a loaded
	// host makes wait), then the ports claimed in the readings' order (pid
	// order), so that a socket several processes share is always asked for
	// the same one.
	mine := make([][]listenSock, len(dets))
	whys := make([]string, len(dets))
	sem := make(chan struct{}, discoverWorkers)
	var wg sync.WaitGroup
	for i, det := range dets {
		if served[det.PID] != "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			mine[i], whys[i] = d.listens(det.PID)
		}()
	}
	wg.Wait()
	urls := make([][]string, len(dets))
	for i, det := range dets {
		if u := served[det.PID]; u != "" {
			urls[i] = []string{u}
			continue
		}
		if whys[i] == "" {
			urls[i], whys[i] = d.claim(det.PID, mine[i])
		}
	}
	ctx, cancel := context.WithTimeout(ctx, discoverBudget)
	defer cancel()
	for i, det := range dets {
		if len(urls[i]) == 0 {
			out[i] = discovery{why: whys[i]}
			continue
		}
		ask, why := memo.plan(det.PID, urls[i])
		if len(ask) == 0 {
			out[i] = discovery{why: why}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = d.discover(ctx, det, ask, whys[i])
			switch {
			case out[i].reading != nil:
				memo.keep(det.PID, urls[i], out[i].reading.Target)
			case ctx.Err() == nil:
				// asked in full and nothing served (a port cut short by
				// the budget is asked again next time)
				memo.keep(det.PID, urls[i], "")
			}
		}()
	}
	wg.Wait()
	return out
}
