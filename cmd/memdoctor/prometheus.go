package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
	"github.com/memdoctor/memdoctor/internal/usecase/prometheus"
	"github.com/spf13/cobra"
)

// promFlags select a Prometheus-compatible server (Prometheus, Thanos,
// Mimir, VictoriaMetrics) and what of it to read.
type promFlags struct {
	url, tokenFile, user, passwordFile, ca string
	insecure                               bool
	timeout, deadline                      time.Duration
	retries                                int
	match, rangeS, step                    string
	// fleet: a fleet scan's window, whose default step is
	// history.FleetStep (set before register).
	fleet bool
}

// register adds the flags to cmd; a deadline already in f is
// --prometheus-deadline's default (else 5 minutes).
func (f *promFlags) register(cmd *cobra.Command, withRange bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "prometheus", "", "read from the Prometheus HTTP API at `URL` (also Thanos, Mimir, VictoriaMetrics; include any path prefix)")
	fl.StringVar(&f.tokenFile, "prometheus-token-file", "", "send the bearer token in `FILE`")
	fl.StringVar(&f.user, "prometheus-user", "", "basic-auth user `NAME`")
	fl.StringVar(&f.passwordFile, "prometheus-password-file", "", "basic-auth password in `FILE`")
	fl.StringVar(&f.ca, "prometheus-ca", "", "trust the CA certificates in PEM `FILE`")
	fl.BoolVar(&f.insecure, "prometheus-insecure", false, "do not verify the server's certificate (test setups only)")
	fl.DurationVar(&f.timeout, "prometheus-timeout", 60*time.Second, "timeout of each request")
	deadline := 5 * time.Minute
	if f.deadline > 0 { // a fleet scan's (fleetDeadline)
		deadline = f.deadline
	}
	fl.DurationVar(&f.deadline, "prometheus-deadline", deadline, "give up the whole read from Prometheus after `DURATION`, retries and all (0: no deadline)")
	fl.IntVar(&f.retries, "prometheus-retries", 3, "retries of a failed request (network errors, 429, 5xx), with exponential backoff (0: none)")
	fl.StringVar(&f.match, "match", "", "label `SELECTOR` every series must match, e.g. '{job=\"node\",dc=\"ams\"}'")
	if withRange {
		fl.StringVar(&f.rangeS, "range", "14d", "length of the range read, ending at --until (now by default)")
		points := history.TargetPoints
		if f.fleet {
			points = history.FleetTargetPoints
		}
		fl.StringVar(&f.step, "step", "", fmt.Sprintf("resolution of the full ranges fetched (default: the range / %d, at least 1m)", points))
	}
}

// server is the server the flags name, for prometheus.Connect.
func (f *promFlags) server() prometheus.PromServer {
	return prometheus.PromServer{URL: f.url, TokenFile: f.tokenFile, User: f.user, PasswordFile: f.passwordFile,
		CA: f.ca, Insecure: f.insecure, Timeout: f.timeout, Retries: f.retries, Deadline: f.deadline}
}

// window resolves --until (RFC 3339, a date, or -DURATION before now),
// --range and --step into the window read, and canonicalises --match.
func (f *promFlags) window(until string) (history.Window, error) {
	resolve := history.PromWindow
	if f.fleet {
		resolve = history.FleetWindow
	}
	win, err := resolve(time.Now().UTC(), until, f.rangeS, f.step)
	if err != nil {
		return win, err
	}
	return win, f.checkMatch()
}

// checkMatch parses --match as Prometheus reads a selector and keeps its
// canonical form.
func (f *promFlags) checkMatch() error {
	m, err := prometheus.ParseMatch(f.match)
	if err != nil {
		return fmt.Errorf("--match %q: %w", f.match, err)
	}
	f.match = m
	return nil
}

// printWarnings shows the server's partial-data warnings on stderr.
func printWarnings(w io.Writer, ws []string) { text.ServerWarnings(w, ws) }

// session bounds one read from Prometheus (what names it in messages):
// prometheus.PromServer.Session, its heartbeat drawn through bar (a new
// one on stderr when nil).
func (f *promFlags) session(cmd *cobra.Command, c prometheus.Answering, bar *progressBar, what string) (ctx context.Context, end func(error) error) {
	if bar == nil {
		bar = newProgress(cmd.ErrOrStderr(), what)
	}
	return f.server().Session(promContext(cmd), c, bar.line, what)
}

func promContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
