package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memdoctor/memdoctor/internal/record"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/spf13/cobra"
)

// defaultDB is where recordings go without --db: /var/lib/memdoctor for
// root, the XDG state directory otherwise.
func defaultDB() string {
	if os.Geteuid() == 0 {
		return "/var/lib/memdoctor/memdoctor.db"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "memdoctor", "memdoctor.db")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "memdoctor", "memdoctor.db")
	}
	return "memdoctor.db"
}

// parseRetention reads a duration flag: a Go duration or a Prometheus one
// with days ("30d", "720h", "1d12h").
func parseRetention(s string) (time.Duration, error) {
	v, err := history.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--retention %q: want a duration such as 30d or 720h", s)
	}
	return v, nil
}

func newRecordCmd() *cobra.Command {
	var (
		db         string
		interval   time.Duration
		retention  string
		top        int
		topCgroups int
		listen     string
		instance   string
		findEvery  time.Duration
		force      bool
		webConfig  string
		sockGroup  string
		allowHost  []string
		trace      bool
		traceHow   string
		rt         runtimeFlags
	)
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Sample this host every interval into a store, and serve /metrics",
		Long: `record samples everything check reads (top processes by PSS included) every
interval into one SQLite file (Gorilla-compressed chunks; see
docs/store-format.md), and serves the latest sample on /metrics in the
Prometheus text format (node_exporter names for host series) with /healthz,
and at / the report of the recording so far (as 'memdoctor report' writes
it; rendered on demand at most once per interval, at least 30 s apart, and
reloading itself; read-only). /metrics also carries the verdicts of that
diagnosis (memdoctor_finding, memdoctor_finding_evidence), evaluated in the
recorder's own process every --findings-every, and never more often than 20
times its own last duration, so that a Prometheus scraping the recorder can
alert on memdoctor's conclusions.

It survives vanished processes, unreadable files and a full disk (samples are
kept in memory, up to 16 MiB, and retried), reopens its file on SIGHUP, and
flushes and exits on SIGTERM. diagnose --from reads the file while record
writes it. Its HTTP server times out slow and idle clients and holds at most
256 connections (fewer under a low open-file limit), so clients never take
what recording needs. --listen PORT means 127.0.0.1:PORT.

/metrics and the page show what only root may read (slabinfo, every user's
processes' PSS): on TCP, every local user reads them. --listen unix:PATH
keeps them to root (socket mode 0600; --listen-group GROUP: 0660), and
--web.config.file adds TLS and basic auth (the exporter-toolkit's file, as
node_exporter's). A TCP listener answers only requests for an IP address,
localhost, this host's name or an --allow-host name (421 otherwise), so no
web page reaches it through a name it points at this host (docs/metrics.md).`,
		Example: `  sudo memdoctor record                            # /var/lib/memdoctor/memdoctor.db, 15 s
  memdoctor record --db /tmp/md.db --interval 5s --listen ''
  memdoctor record --scrape http://127.0.0.1:8080/metrics   # a service's GC too
  sudo memdoctor record --listen unix:/run/memdoctor/record.sock   # root only
  memdoctor record --listen :9105 --web.config.file web.yml  # TLS, basic auth
  memdoctor diagnose --from /var/lib/memdoctor/memdoctor.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ret, err := parseRetention(retention)
			if err != nil {
				return err
			}
			if err := rt.Validate(); err != nil {
				return err
			}
			if err := checkInterval(interval, force); err != nil {
				return err
			}
			if interval >= 10*time.Second { // a lean recorder (record.Config.Lean)
				record.TrimStartup()
			}
			if topCgroups < 1 || topCgroups > 10000 {
				return fmt.Errorf("--cgroups %d: want 1 to 10000", topCgroups)
			}
			if err := checkTop(top); err != nil {
				return err
			}
			var sock *record.UnixSocket
			if path, ok := strings.CutPrefix(listen, "unix:"); ok {
				if sock, err = unixSocket(path, sockGroup); err != nil {
					return err
				}
			} else if listen != "" {
				if listen, err = listenAddr(listen); err != nil {
					return err
				}
			}
			if sockGroup != "" && sock == nil {
				return fmt.Errorf("--listen-group %s: only for a unix socket (--listen unix:/run/memdoctor/record.sock)", sockGroup)
			}
			if webConfig != "" {
				if err := record.CheckWebConfig(webConfig); err != nil {
					return err
				}
			}
			if db == "" {
				db = defaultDB()
			}
			if err := os.MkdirAll(filepath.Dir(db), 0o750); err != nil {
				return fmt.Errorf("creating the store's directory: %w (choose another with --db)", err)
			}
			// The recorder must never become the memory problem it looks
			// for: collect garbage early and keep the heap under a soft limit
			// (an explicit GOGC or GOMEMLIMIT in the environment wins).
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(25)
			}
			// Samples held while the disk is full (record.DefaultMaxPendingBytes
			// at most) come on top.
			if os.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(12<<20 + record.DefaultMaxPendingBytes)
			}
			cfg := record.Config{DBPath: db, Interval: interval, Retention: ret, Top: top, TopCgroups: topCgroups,
				Scrape: rt.URLs, ScrapeTimeout: rt.Timeout, ScrapeAuth: rt.Auth, Discover: rt.Discover,
				Instance: instance, Log: cmd.ErrOrStderr(),
				// Between samples 10 s or more apart, give back what a
				// sample needed (see record.Config.Lean); closer samples
				// would only map it all again.
				Lean:  interval >= 10*time.Second,
				Trace: trace, TraceMethod: traceHow}
			if listen != "" {
				cfg.PageEvery = max(interval, 30*time.Second)
				cfg.Page = record.ChildPage(db, cfg.PageEvery)
				if findEvery > 0 {
					cfg.Findings, cfg.FindingsEvery = history.RecordingFindings(db), findEvery
				}
			}
			rec, err := record.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for range hup {
					_ = rec.Reopen()
				}
			}()
			var srv *record.Server
			if listen != "" {
				var ln net.Listener
				if sock != nil {
					ln, err = record.ListenUnix(*sock)
				} else {
					ln, err = net.Listen("tcp", listen)
				}
				if err != nil {
					_ = rec.Close()
					return fmt.Errorf("--listen %s: %w %s", listen, err, listenHint(err))
				}
				// Clients never take the file descriptors collection needs:
				// the open-file limit raised as far as allowed, and the
				// connections held to a fraction of it.
				record.RaiseNoFile()
				so := record.DefaultServerOptions()
				so.WebConfigFile, so.AllowHosts, so.Log = webConfig, allowHost, cmd.ErrOrStderr()
				if sock != nil {
					so.HostCheck = false // no browser reaches a unix socket
				} else if hn, err := os.Hostname(); err == nil {
					so.AllowHosts = append(so.AllowHosts, hn) // this host's own name
				}
				srv = rec.NewServer(ln, so)
				go func() {
					if err := srv.Serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
						cmd.PrintErrf("serving %s: %v\n", listen, err)
					}
				}()
				switch {
				case sock != nil:
					cmd.PrintErrf("serving the live report at / and /metrics, /healthz on the unix socket %s (mode %04o)\n", sock.Path, sock.Mode())
				case webConfig != "":
					cmd.PrintErrf("serving the live report at / and /metrics, /healthz on %s, with TLS and basic auth as %s says\n", ln.Addr(), webConfig)
				default:
					cmd.PrintErrf("serving the live report at http://%s/ and /metrics, /healthz\n", ln.Addr())
				}
			}
			runErr := rec.Run(ctx)
			if srv != nil {
				sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = srv.Shutdown(sctx)
				cancel()
			}
			if err := rec.Close(); err != nil {
				return fmt.Errorf("closing the store: %w", err)
			}
			return runErr
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "store `FILE` (default /var/lib/memdoctor/memdoctor.db as root, else ~/.local/state/memdoctor/memdoctor.db)")
	cmd.Flags().DurationVar(&interval, "interval", 15*time.Second, "sampling interval (1s or more, unless --force-interval)")
	cmd.Flags().BoolVar(&force, "force-interval", false, "accept an --interval below 1s (each sample reads every process; the recorder then costs a CPU)")
	cmd.Flags().StringVar(&retention, "retention", "30d", "delete samples older than this (0 keeps everything)")
	cmd.Flags().IntVar(&top, "top", 50, "processes recorded per sample (by PSS)")
	cmd.Flags().IntVar(&topCgroups, "cgroups", 10, "memory cgroups recorded per sample, the largest by usage (besides those near a limit or with OOM kills): raise it to right-size every container of a node")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:9105", "`ADDR` for the live report at /, /metrics and /healthz: HOST:PORT, or a bare PORT for 127.0.0.1:PORT (':PORT' is every interface; '' serves nothing), or unix:PATH for a unix socket only its owner (root) may use")
	cmd.Flags().StringVar(&sockGroup, "listen-group", "", "with --listen unix:PATH, the `GROUP` (name or id) that may use the socket too (mode 0660 instead of 0600)")
	cmd.Flags().StringVar(&webConfig, "web.config.file", "", "`FILE` enabling TLS and basic auth, in the Prometheus exporter-toolkit's format (tls_server_config, basic_auth_users with bcrypt hashes); read again when it changes")
	cmd.Flags().StringSliceVar(&allowHost, "allow-host", nil, "`NAME` (repeatable) accepted in the Host header besides IP addresses, localhost and this host's name; others get 421, so that no web page reaches the recorder by a name it points at this host ('*' accepts any)")
	cmd.Flags().BoolVar(&trace, "trace", false, "root: trace memory cgroup creation and removal, and reclaim stalls, for the recording's life (BPF, else tracefs); each sample stores the top creators and stallers of its interval, so diagnose names them")
	cmd.Flags().StringVar(&traceHow, "trace-method", "", "with --trace, force the tracer: bpf or tracefs (default: BPF, else tracefs)")
	cmd.Flags().DurationVar(&findEvery, "findings-every", 5*time.Minute, "how often the recording is diagnosed for the findings on /metrics (0: never)")
	rt.register(cmd)
	cmd.Flags().StringVar(&instance, "instance", "", "name of this host in the store (default: hostname; localhost where none is set, as the kernel's \"(none)\")")
	return cmd
}

// minInterval is the shortest --interval accepted without --force-interval:
// a sample reads every process' status and the largest ones' smaps_rollup.
const minInterval = time.Second

func checkInterval(d time.Duration, force bool) error {
	if d <= 0 {
		return fmt.Errorf("--interval %v: want a positive duration such as 15s", d)
	}
	if d < minInterval && !force {
		return fmt.Errorf("--interval %v: below %v the recorder would cost more than what it watches (each sample reads every process); use %v or more, or add --force-interval", d, minInterval, minInterval)
	}
	return nil
}

// checkTop validates --top of record, check and capture.
func checkTop(top int) error {
	if top < 0 {
		return fmt.Errorf("--top %d: want 0 or more", top)
	}
	return nil
}

// listenAddr turns --listen into an address to bind. A bare port means
// 127.0.0.1:PORT, loopback like the default: the recorder is never exposed
// to the network unless a host (or ':PORT', every interface) is named.
func listenAddr(s string) (string, error) {
	if p, err := strconv.ParseUint(s, 10, 16); err == nil && p > 0 {
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
		return "", fmt.Errorf("--listen %q: want HOST:PORT such as 127.0.0.1:9105, or a bare port for 127.0.0.1:PORT (':PORT' listens on every interface; '' serves nothing)", s)
	}
	return s, nil
}

// listenHint says what to do about a failed --listen.
func listenHint(err error) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "(the port is taken: another recorder running? pick another port, or --listen '' to serve nothing)"
	case errors.Is(err, syscall.EACCES):
		return "(ports below 1024 need root: pick a higher one)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "(not an address of this host: use 127.0.0.1:PORT, or :PORT for every interface)"
	}
	return "(--listen '' serves nothing)"
}

// unixSocket reads --listen unix:PATH and --listen-group.
func unixSocket(path, group string) (*record.UnixSocket, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("--listen unix:%s: want an absolute path such as unix:/run/memdoctor/record.sock", path)
	}
	s := &record.UnixSocket{Path: path, GID: -1}
	if group == "" {
		return s, nil
	}
	if gid, err := strconv.Atoi(group); err == nil && gid >= 0 {
		s.GID = gid
		return s, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return nil, fmt.Errorf("--listen-group %s: no such group (give a group name of this host or a numeric id)", group)
	}
	s.GID, _ = strconv.Atoi(g.Gid)
	return s, nil
}
