// Package record samples a host at a fixed interval into a store and serves
// what it sees: /metrics (node_exporter names for host series, memdoctor_*
// for the rest, and the recorder's own cost), /healthz, and optionally a
// live page at / rendered on demand and cached.
//
// It keeps running through vanished processes, unreadable files and a full
// disk: a failed append keeps the snapshot in memory (bounded) and retries at
// the next interval, so nothing is lost while space returns.
package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/cgtrace"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store"
)

// Config configures a recorder.
type Config struct {
	DBPath    string
	Interval  time.Duration
	Retention time.Duration
	// Top is how many processes get smaps_rollup and are recorded.
	Top int
	// TopCgroups is how many memory cgroups are recorded by usage (0: the
	// profile's 10).
	TopCgroups int
	// Scrape lists applications' Prometheus endpoints whose runtime GC
	// series are recorded with each sample; ScrapeTimeout bounds each.
	Scrape        []string
	ScrapeTimeout time.Duration
	// ScrapeAuth is sent with every scrape.
	ScrapeAuth runtimes.Auth
	// Discover reads the /metrics that detected runtimes serve on their
	// own loopback ports.
	Discover bool
	// Instance names this host in the store (default: hostname).
	Instance string
	// FS is what to read (default: the live host).
	FS *procfs.FS
	// Log receives one line per event worth an operator's attention.
	Log io.Writer
	// MaxPending bounds the snapshots kept in memory while appends fail
	// (default: one hour of intervals), and MaxPendingBytes their size
	// (default DefaultMaxPendingBytes). Past either, the oldest is dropped
	// and counted.
	MaxPending      int
	MaxPendingBytes int64
	// Page, when set, renders the page served at / (the report of the
	// recording so far). It runs only when someone asks, at most once per
	// PageEvery (default: the interval, at least 30 s); requests in between,
	// and concurrent ones, share the last rendering.
	// Page gets the recorder's instance name.
	Page      func(w io.Writer, instance string) error
	PageEvery time.Duration
	// Findings, when set, diagnoses the recording so far and returns its
	// findings, served on /metrics as memdoctor_finding and
	// memdoctor_finding_evidence. It runs in the background, never two at
	// once: first once a sample is stored, then every FindingsEvery
	// (default 5 min) but never sooner than 20 times its own last duration
	// after it, so that it costs at most 5 % of one CPU on a long recording.
	Findings      func(ctx context.Context, instance string) ([]model.Finding, error)
	FindingsEvery time.Duration
	// Lean, for a recorder that is its own process: after each sample,
	// each answer on /metrics and each evaluation of the findings, the heap
	// goes back to the kernel (see settle).
	Lean bool
	// Trace runs the cgroup and reclaim trace (cgtrace, BPF else tracefs
	// as TraceMethod says) for the recorder's life: each sample adds what
	// it saw over the interval (the top creators and stallers, the rest
	// summed). Where it cannot run, the log says why and recording goes on.
	Trace       bool
	TraceMethod string
}

// DefaultMaxPendingBytes bounds the samples held in memory while the store
// cannot take them (a full disk): the recorder must never become the memory
// problem it looks for.
const DefaultMaxPendingBytes = 16 << 20

// pageWriteTimeout is how long the answer of the live page may take: it may
// have to be rendered first (at most 2 minutes).
const pageWriteTimeout = 150 * time.Second

// findingsCost is how many times its own duration an evaluation of the
// findings waits before the next one.
const findingsCost = 20

// Recorder samples and stores.
type Recorder struct {
	cfg  Config
	fs   procfs.FS
	live bool
	// names names cgroups' owners from the runtimes' state (live only),
	// its listings cached across ticks.
	names *cgroups.Runtime
	// discovered carries discovery's answers from one tick to the next,
	// so that a silent port is not asked every interval.
	discovered *runtimes.DiscoverMemo
	// owners keeps which process owns each --scrape target's socket, so
	// that a target keeps its pid label from one sample to the next.
	owners *runtimes.OwnerMemo
	// exes keeps the Go version of the recorded processes' executables
	// from one tick to the next.
	exes *runtimes.ExeMemo
	// dotnet holds the .NET processes' diagnostics sessions (live only).
	dotnet *runtimes.DotNetWatch
	// cgEvents holds each cgroup's event counters from the previous tick:
	// a tick reads in full the cgroups whose events rose since.
	cgEvents *cgroups.EventHistory
	// oom holds the containers' unreclaimable memory at the last samples
	// (guarded by mu).
	oom oomHistory

	settling     sync.Mutex // held by settle; guards the two below
	settled      time.Time
	settleQueued bool // a settle waits for the second after the last one
	trimDue      bool // the next settle runs trimExecutablePages (the first one, and the one after each evaluation of the findings)

	mu        sync.Mutex
	lock      *store.Lock // the store's writer lock, held from New to Close, across reopens
	st        *store.Store
	latest    *sample.Snapshot
	pending   []*sample.Snapshot
	pendBytes int64 // estimated size of pending
	pendDrops int64 // pending samples dropped because the buffer was full
	// pendDropsLogged is pendDrops when storing last worked.
	pendDropsLogged int64
	lastOK          time.Time
	lastErr         error
	appends         int64
	appendErrs      int64
	collects        int64
	dropped         int64
	lastRetain      time.Time
	// lastStored is the newest sample time in the store: a snapshot not newer
	// (the clock stepped back) can never be stored and is dropped.
	lastStored time.Time

	page pageCache
	fnd  findingsState
	srv  atomic.Pointer[Server]

	tracer     *cgtrace.Tracer
	traceNotes string // the trace's notes last logged
}

// findingsState holds the last evaluation of the findings.
type findingsState struct {
	mu      sync.Mutex
	list    []model.Finding
	okAt    time.Time // when the served list was evaluated
	took    time.Duration
	ok      bool // the last evaluation succeeded
	evals   int64
	next    time.Time
	running bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// pageCache holds the last rendering of the live page. Its own lock (not
// the recorder's) is held while rendering, so collection never waits for
// a page and concurrent requests share one rendering.
type pageCache struct {
	mu      sync.Mutex
	at      time.Time
	body    []byte
	err     error
	renders atomic.Int64
}

// storeCacheKiB is the page cache of each of the recorder's store
// connections. A sample's writes touch a few pages, and SQLite's allocator
// keeps resident what the cache once held: at the store's default of
// 1 MiB a recorder's anonymous memory was about 1.2 MiB higher after a
// minute (10.0 MiB, 8.8 at 64 KiB, the same samples stored).
const storeCacheKiB = 64

// New opens the store and prepares a recorder.
func New(cfg Config) (*Recorder, error) {
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("--interval %v: want a positive duration", cfg.Interval)
	}
	switch cfg.TraceMethod {
	case "", "bpf", "tracefs":
	default:
		return nil, fmt.Errorf("--trace-method %q: want bpf or tracefs", cfg.TraceMethod)
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = max(int(time.Hour/cfg.Interval), 4)
	}
	if cfg.MaxPendingBytes == 0 {
		cfg.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.PageEvery <= 0 {
		cfg.PageEvery = max(cfg.Interval, 30*time.Second)
	}
	if cfg.FindingsEvery <= 0 {
		cfg.FindingsEvery = 5 * time.Minute
	}
	r := &Recorder{cfg: cfg, trimDue: true, cgEvents: cgroups.NewEventHistory(), discovered: &runtimes.DiscoverMemo{}, owners: &runtimes.OwnerMemo{}, exes: &runtimes.ExeMemo{}, oom: oomHistory{}}
	if cfg.FS != nil {
		r.fs = *cfg.FS
	} else {
		r.fs = procfs.NewFS("/")
		r.live = true
		r.names = cgroups.NewRuntime("/")
		// A session held on each .NET process across the samples: its
		// collections, pauses and counters since recording began.
		r.dotnet = runtimes.NewDotNetRecorder(true)
	}
	if r.cfg.Instance == "" {
		h, _ := os.Hostname()
		r.cfg.Instance = model.HostName(h)
	}
	lock, err := store.AcquireLock(cfg.DBPath)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%w: one recorder per store; stop that one first, or record into another file with --db", err)
	}
	if err != nil {
		return nil, err
	}
	st, err := store.Open(cfg.DBPath, store.Options{Lock: lock, CacheKiB: storeCacheKiB})
	if err != nil {
		_ = lock.Release()
		return nil, err
	}
	r.lock, r.st = lock, st
	r.noteStored()
	if cfg.Trace {
		r.startTrace()
	}
	return r, nil
}

// startTrace starts the trace; one that cannot run is logged, never fatal.
func (r *Recorder) startTrace() {
	if !r.live {
		r.logf("--trace watches this host: not traced while recording another root")
		return
	}
	t, err := cgtrace.Start(context.Background(), cgtrace.Options{Hierarchy: cgtrace.MemoryHierarchyID(procfs.ProcMount), Method: r.cfg.TraceMethod})
	if err != nil {
		r.logf("not tracing: %v", err)
		return
	}
	r.tracer = t
	r.logf("tracing memory cgroup creation and removal, and reclaim, with %s", t.Method())
}

// addTraceLocked adds the trace's interval to s.
func (r *Recorder) addTraceLocked(s *sample.Snapshot) {
	if r.tracer == nil {
		return
	}
	sum := r.tracer.Take()
	sum.AddTo(s, false)
	if n := strings.Join(sum.Notes, "; "); n != r.traceNotes {
		r.traceNotes = n
		if n != "" {
			r.logf("trace: %s", n)
		}
	}
}

// noteStored reads the newest stored sample time of this instance.
func (r *Recorder) noteStored() {
	if _, to, err := r.st.TimeRange(r.cfg.Instance); err == nil && to.After(r.lastStored) {
		r.lastStored = to
	}
}

func (r *Recorder) logf(format string, a ...any) {
	_, _ = fmt.Fprintf(r.cfg.Log, time.Now().UTC().Format(time.RFC3339)+" "+format+"\n", a...)
}

// Reopen closes and reopens the store file (SIGHUP: after the file was
// moved, or to pick up a restored copy).
func (r *Recorder) Reopen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		if err := r.st.Close(); err != nil {
			r.logf("closing store: %v", err)
		}
	}
	st, err := store.Open(r.cfg.DBPath, store.Options{Lock: r.lock, CacheKiB: storeCacheKiB})
	if err != nil {
		r.st = nil
		r.lastErr = err
		r.logf("reopening store: %v (samples are kept in memory and retried)", err)
		return err
	}
	r.st = st
	r.noteStored()
	r.logf("store %s reopened", r.cfg.DBPath)
	return nil
}

// Close stops an evaluation of the findings, flushes what is pending and
// closes the store.
func (r *Recorder) Close() error {
	r.fnd.mu.Lock()
	if r.fnd.cancel != nil {
		r.fnd.cancel()
	}
	r.fnd.next = time.Now().Add(100 * 365 * 24 * time.Hour) // no more
	r.fnd.mu.Unlock()
	r.fnd.wg.Wait()
	r.dotnet.Stop() // each session stopped (StopTracing) in its target
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tracer != nil {
		r.tracer.Close()
		r.tracer = nil
	}
	r.flushLocked()
	if len(r.pending) > 0 {
		r.logf("exiting with %d snapshots not stored: %v", len(r.pending), r.lastErr)
	}
	if n := r.pendDrops - r.pendDropsLogged; n > 0 {
		r.logf("%d snapshots were dropped while storing failed (held in memory up to %s, %d samples)", n, format.MiB(float64(r.cfg.MaxPendingBytes)), r.cfg.MaxPending)
	}
	var err error
	if r.st != nil {
		err = r.st.Close()
		r.st = nil
	}
	return errors.Join(err, r.lock.Release())
}

// Run samples every interval until ctx is done. Samples are stamped with
// their scheduled time on the interval's grid (as Prometheus does): equal
// spacing costs the store one bit per timestamp, jitter two bytes.
func (r *Recorder) Run(ctx context.Context) error {
	r.logf("recording %s every %v into %s (top %d processes)", r.cfg.Instance, r.cfg.Interval, r.cfg.DBPath, r.cfg.Top)
	next := r.firstSlot(time.Now())
	r.trimStartup()
	r.Tick(next)
	r.settle()
	for {
		next = nextSlot(next, time.Now(), r.cfg.Interval)
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
			r.Tick(next)
			r.settle()
		}
	}
}

// nextSlot returns the slot of the interval's grid to sample after prev
// (back on the grid after firstSlot's now), given the time now. A slot
// passed by more than half an interval (a stalled host, a suspended
// process) is skipped; one passed by less (a busy host, a slow collection)
// is taken at once: no sample is lost for a few milliseconds, and
// collection still rests at least half an interval in every two.
func nextSlot(prev, now time.Time, interval time.Duration) time.Time {
	next := prev.Truncate(interval).Add(interval)
	if late := now.Sub(next); late > interval/2 {
		next = next.Add(late.Truncate(interval) + interval)
	}
	return next
}

// firstSlot returns the time the first sample is stamped with: the current
// slot of the interval's grid, unless a recorder that just stopped already
// stored that slot (a quick restart), then now itself, so that nothing is
// lost and the clock is not said to have gone back when it did not.
func (r *Recorder) firstSlot(now time.Time) time.Time {
	slot := now.Truncate(r.cfg.Interval)
	r.mu.Lock()
	last := r.lastStored
	r.mu.Unlock()
	if slot.After(last) {
		return slot
	}
	// Stored times have millisecond resolution.
	if t := now.Truncate(time.Millisecond); t.After(last) {
		return t
	}
	return slot // the clock did go back: flush says so
}

// Tick collects once, stamped at, and stores what it can.
func (r *Recorder) Tick(at time.Time) {
	start := time.Now()
	cpu0 := selfCPU()
	opt := collect.Profile(collect.Record, r.cfg.Top, r.live)
	opt.Names, opt.CgroupEvents, opt.Now = r.names, r.cgEvents, func() time.Time { return at }
	if r.cfg.TopCgroups > 0 {
		opt.TopCgroups = r.cfg.TopCgroups
	}
	opt.Scrape, opt.ScrapeTimeout, opt.ScrapeAuth = r.cfg.Scrape, r.cfg.ScrapeTimeout, r.cfg.ScrapeAuth
	opt.Discover, opt.DiscoverMemo, opt.ExeMemo, opt.OwnerMemo = r.cfg.Discover, r.discovered, r.exes, r.owners
	opt.DotNet, opt.DotNetPort = r.dotnet, r.dotnet != nil
	res, err := collect.Collect(r.fs, opt)
	if err != nil {
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		r.logf("collection failed: %v", err)
		return
	}
	// The sample alone is kept (for /metrics, /healthz and the store):
	// a pointer into res would keep all the collection read, the
	// processes' mappings and the runtimes' readings, live until the next.
	s := new(sample.Snapshot)
	*s = res.Snapshot
	s.Instance = r.cfg.Instance
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collects++
	r.addTraceLocked(s)
	r.oom.addOOMSeries(s)
	s.Add("memdoctor_record_collect_seconds", time.Since(start).Seconds())
	s.Add("memdoctor_record_collect_cpu_seconds", selfCPU()-cpu0)
	if cpu := selfCPU(); cpu >= 0 {
		s.Add("process_cpu_seconds_total", cpu)
	}
	if rss := selfRSS(); rss > 0 {
		s.Add("process_resident_memory_bytes", float64(rss))
	}
	s.Add("memdoctor_record_pending_scrapes", float64(len(r.pending)))
	s.Add("memdoctor_record_pending_bytes", float64(r.pendBytes))
	s.Add("memdoctor_record_pending_dropped_total", float64(r.pendDrops))
	r.latest = s
	r.holdLocked(s)
	r.flushLocked()
	if !r.lastStored.IsZero() {
		r.maybeEvaluate()
	}
	if r.cfg.Retention > 0 && r.st != nil && time.Since(r.lastRetain) > time.Hour {
		r.lastRetain = time.Now()
		if n, err := r.st.DeleteBefore(time.Now().Add(-r.cfg.Retention)); err != nil {
			r.logf("retention: %v", err)
		} else if n > 0 {
			r.logf("retention: removed %d chunks older than %v", n, r.cfg.Retention)
		}
	}
}

// holdLocked adds s to the samples waiting to be stored, dropping the
// oldest (the newest state matters most) past MaxPending samples or
// MaxPendingBytes.
func (r *Recorder) holdLocked(s *sample.Snapshot) {
	size := snapshotBytes(s)
	dropped := 0
	for len(r.pending) > 0 && (len(r.pending) >= r.cfg.MaxPending || r.pendBytes+size > r.cfg.MaxPendingBytes) {
		r.pendBytes -= snapshotBytes(r.pending[0])
		r.pending[0] = nil
		r.pending = r.pending[1:]
		dropped++
	}
	r.pending = append(r.pending, s)
	r.pendBytes += size
	if dropped > 0 {
		if r.pendDrops == r.pendDropsLogged {
			r.logf("the samples held in memory reached %d (%s, the limit): dropping the oldest while storing fails",
				len(r.pending), format.MiB(float64(r.pendBytes)))
		}
		r.pendDrops += int64(dropped)
	}
}

// scrapeBytes estimates the memory a snapshot holds.
func snapshotBytes(s *sample.Snapshot) int64 {
	const metric, label = 48, 32 // sizes of sample.Metric and sample.Label
	n := int64(64 + len(s.Instance))
	for _, m := range s.Metrics {
		n += metric + int64(len(m.Name))
		for _, l := range m.Labels {
			n += label + int64(len(l.Name)+len(l.Value))
		}
	}
	return n
}

func (r *Recorder) flushLocked() {
	if len(r.pending) == 0 {
		return
	}
	if r.st == nil {
		return
	}
	keep := r.pending[:0]
	for _, p := range r.pending {
		if p.Time.After(r.lastStored) {
			keep = append(keep, p)
		}
	}
	if n := len(r.pending) - len(keep); n > 0 {
		r.dropped += int64(n)
		r.logf("the clock went back: dropping %d samples not newer than the store's newest (%s)", n, r.lastStored.UTC().Format(time.RFC3339))
		clear(r.pending[len(keep):])
		r.pendBytes = 0
		for _, p := range keep {
			r.pendBytes += snapshotBytes(p)
		}
	}
	r.pending = keep
	if len(r.pending) == 0 {
		return
	}
	err := r.st.Append(r.cfg.Instance, r.pending...)
	if err != nil {
		r.appendErrs++
		if r.lastErr == nil || r.lastErr.Error() != err.Error() {
			r.logf("storing failed, keeping %d snapshots in memory and retrying every %v: %v%s", len(r.pending), r.cfg.Interval, err, hint(err))
		}
		r.lastErr = err
		return
	}
	if r.lastErr != nil {
		lost := ""
		if n := r.pendDrops - r.pendDropsLogged; n > 0 {
			lost = fmt.Sprintf("; %d dropped while it failed (samples held in memory are bounded: %s, %d samples)", n, format.MiB(float64(r.cfg.MaxPendingBytes)), r.cfg.MaxPending)
		}
		r.logf("storing works again: %d snapshots written%s", len(r.pending), lost)
	}
	r.pendDropsLogged = r.pendDrops
	r.appends += int64(len(r.pending))
	r.lastStored = r.pending[len(r.pending)-1].Time
	clear(r.pending)
	r.pending = r.pending[:0]
	r.pendBytes = 0
	r.lastErr = nil
	r.lastOK = time.Now()
}

// maybeEvaluate starts an evaluation of the findings in the background when
// one is due and none runs.
func (r *Recorder) maybeEvaluate() {
	if r.cfg.Findings == nil {
		return
	}
	f := &r.fnd
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running || time.Now().Before(f.next) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	f.running, f.cancel = true, cancel
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer cancel()
		defer r.settleAfterFindings()
		start := time.Now()
		list, err := r.cfg.Findings(ctx, r.cfg.Instance)
		took := time.Since(start)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.running, f.cancel = false, nil
		f.took, f.ok = took, err == nil
		f.evals++
		if n := time.Now().Add(max(r.cfg.FindingsEvery, findingsCost*took)); n.After(f.next) {
			f.next = n
		}
		if err != nil {
			if ctx.Err() == nil {
				r.logf("diagnosing the recording for /metrics: %v (the last findings are served until it works)", err)
			}
			return
		}
		f.list, f.okAt = list, time.Now()
	}()
}

// findingMetrics are the current findings as series: one
// memdoctor_finding per finding (value 1) and one
// memdoctor_finding_evidence per numeric evidence, with the evaluation's
// own time, duration and outcome.
func (r *Recorder) findingMetrics() *sample.Snapshot {
	out := &sample.Snapshot{}
	if r.cfg.Findings == nil {
		return out
	}
	f := &r.fnd
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.evals == 0 {
		return out // not evaluated yet: no verdict, not "no findings"
	}
	seen := map[string]bool{}
	for _, fd := range f.list {
		key := fd.ID + "\x00" + fd.Subject
		if seen[key] {
			continue // sorted most severe first: keep that one
		}
		seen[key] = true
		out.Add("memdoctor_finding", 1, "id", fd.ID, "severity", string(fd.Severity), "subject", fd.Subject)
		names := map[string]bool{}
		for _, e := range fd.Evidence {
			if e.Text != "" || names[e.Name] || math.IsNaN(e.Value) {
				continue
			}
			names[e.Name] = true
			out.Add("memdoctor_finding_evidence", e.Value, "id", fd.ID, "subject", fd.Subject, "name", e.Name, "unit", e.Unit)
		}
	}
	if !f.okAt.IsZero() {
		out.Add("memdoctor_findings_evaluated_timestamp_seconds", float64(f.okAt.UnixMilli())/1000)
	}
	out.Add("memdoctor_findings_evaluation_seconds", f.took.Seconds())
	ok := 0.0
	if f.ok {
		ok = 1
	}
	out.Add("memdoctor_findings_evaluation_success", ok)
	return out
}

func hint(err error) string {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "full") || strings.Contains(msg, "no space"):
		return " (disk full: free space or lower --retention; recording resumes by itself)"
	case errors.Is(err, store.ErrCorrupt):
		return " (move the damaged file aside and send SIGHUP to start a new one)"
	}
	return ""
}

// Handler serves /metrics and /healthz, and the live page at / when
// Config.Page is set.
func (r *Recorder) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", r.serveMetrics)
	mux.HandleFunc("/healthz", r.serveHealth)
	if r.cfg.Page != nil {
		mux.HandleFunc("GET /{$}", r.servePage)
	}
	return mux
}

// NewServer serves Handler on ln within the limits of o, and reports its
// connections on /metrics.
func (r *Recorder) NewServer(ln net.Listener, o ServerOptions) *Server {
	srv := NewServer(ln, r.Handler(), o)
	r.srv.Store(srv)
	return srv
}

// servePage serves the live page, rendering it again only when the last
// rendering is older than PageEvery.
func (r *Recorder) servePage(w http.ResponseWriter, _ *http.Request) {
	// The page may have to be rendered first: more time than /metrics.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(pageWriteTimeout))
	pc := &r.page
	pc.mu.Lock()
	if pc.at.IsZero() || time.Since(pc.at) >= r.cfg.PageEvery {
		var buf bytes.Buffer
		err := r.cfg.Page(&buf, r.cfg.Instance)
		pc.at, pc.err, pc.body = time.Now(), err, nil
		if err == nil {
			pc.body = buf.Bytes()
		} else {
			r.logf("rendering the live page: %v", err)
		}
		pc.renders.Add(1)
	}
	body, err, at := pc.body, pc.err, pc.at
	pc.mu.Unlock()
	h := w.Header()
	h.Set("Cache-Control", "max-age="+strconv.Itoa(int(r.cfg.PageEvery.Seconds())))
	h.Set("X-Content-Type-Options", "nosniff")
	if err != nil {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "the report of the recording could not be made: %v\n(it is tried again in %v; /metrics and /healthz say whether recording works)\n",
			err, r.cfg.PageEvery)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	h.Set("Last-Modified", at.UTC().Format(http.TimeFormat))
	_, _ = w.Write(body) // a client gone away: nothing to do
}

func (r *Recorder) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	latest := r.latest
	self := &sample.Snapshot{}
	self.Add("memdoctor_record_scrapes_stored_total", float64(r.appends))
	self.Add("memdoctor_record_append_errors_total", float64(r.appendErrs))
	self.Add("memdoctor_record_collections_total", float64(r.collects))
	self.Add("memdoctor_record_dropped_total", float64(r.dropped))
	r.mu.Unlock()
	if r.cfg.Page != nil {
		self.Add("memdoctor_record_page_renders_total", float64(r.page.renders.Load()))
	}
	if srv := r.srv.Load(); srv != nil {
		open, evicted, refused := srv.Conns()
		self.Add("memdoctor_record_http_connections", float64(open))
		self.Add("memdoctor_record_http_connections_limit", float64(srv.ln.max))
		self.Add("memdoctor_record_http_connections_closed_total", float64(evicted), "reason", "evicted")
		self.Add("memdoctor_record_http_connections_closed_total", float64(refused), "reason", "refused")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	snapshots := []*sample.Snapshot{self, r.findingMetrics()}
	if latest != nil {
		snapshots = append([]*sample.Snapshot{latest}, snapshots...)
	}
	if err := sample.WriteText(w, snapshots...); err != nil {
		r.logf("serving /metrics: %v", err)
	}
	if r.cfg.Lean {
		go r.settle() // once the answer is out
	}
}

func (r *Recorder) serveHealth(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stale := r.latest == nil || time.Since(r.latest.Time) > 3*r.cfg.Interval
	switch {
	case stale:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "no collection in the last %v\n", 3*r.cfg.Interval)
	case r.lastErr != nil:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "collecting, but storing fails (%d snapshots pending, %s; %d dropped to stay within %s): %v\n",
			len(r.pending), format.MiB(float64(r.pendBytes)), r.pendDrops-r.pendDropsLogged, format.MiB(float64(r.cfg.MaxPendingBytes)), r.lastErr)
	default:
		_, _ = fmt.Fprintf(w, "ok: last sample %s, %d stored\n", r.latest.Time.UTC().Format(time.RFC3339), r.appends)
	}
}

// selfCPU returns this process' user+system CPU seconds, or -1.
func selfCPU() float64 {
	st, err := procfs.Live().SelfStat()
	if err != nil {
		return -1
	}
	return float64(st.UTimeTicks+st.STimeTicks) / 100
}

// selfRSS returns this process' resident memory in bytes.
func selfRSS() int64 {
	m, err := procfs.Live().SelfStatm()
	if err != nil {
		return 0
	}
	return m.Resident * int64(os.Getpagesize())
}
