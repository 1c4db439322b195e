package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/termsafe"
	"github.com/spf13/cobra"
)

// promFlags select a Prometheus-compatible server (Prometheus, Thanos,
// Mimir, VictoriaMetrics) and what of it to read.
type promFlags struct {
	url, tokenFile, user, passwordFile, ca string
	insecure                               bool
	timeout                                time.Duration
	retries                                int
	match, rangeS, step                    string
}

func (f *promFlags) register(cmd *cobra.Command, withRange bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "prometheus", "", "read from the Prometheus HTTP API at `URL` (also Thanos, Mimir, VictoriaMetrics; include any path prefix)")
	fl.StringVar(&f.tokenFile, "prometheus-token-file", "", "send the bearer token in `FILE`")
	fl.StringVar(&f.user, "prometheus-user", "", "basic-auth user `NAME`")
	fl.StringVar(&f.passwordFile, "prometheus-password-file", "", "basic-auth password in `FILE`")
	fl.StringVar(&f.ca, "prometheus-ca", "", "trust the CA certificates in PEM `FILE`")
	fl.BoolVar(&f.insecure, "prometheus-insecure", false, "do not verify the server's certificate (test setups only)")
	fl.DurationVar(&f.timeout, "prometheus-timeout", 60*time.Second, "timeout of each request")
	fl.IntVar(&f.retries, "prometheus-retries", 3, "retries of a failed request (network errors, 429, 5xx), with exponential backoff (0: none)")
	fl.StringVar(&f.match, "match", "", "label `SELECTOR` every series must match, e.g. '{job=\"node\",dc=\"ams\"}'")
	if withRange {
		fl.StringVar(&f.rangeS, "range", "14d", "length of the range read, ending at --until (now by default)")
		fl.StringVar(&f.step, "step", "", "resolution of the full ranges fetched (default: the range / 4000, at least 1m)")
	}
}

func (f *promFlags) client() (*prom.Client, error) {
	if f.retries < 0 {
		return nil, fmt.Errorf("--prometheus-retries %d: give 0 (no retry) or more", f.retries)
	}
	retries := f.retries
	if retries == 0 {
		retries = -1 // prom.Options: 0 is the default (3), negative is none
	}
	return prom.New(prom.Options{URL: f.url, BearerTokenFile: f.tokenFile, Username: f.user, PasswordFile: f.passwordFile,
		CAFile: f.ca, InsecureSkipVerify: f.insecure, Timeout: f.timeout, Retries: retries})
}

// window returns the range's end and length: --until (RFC 3339, a date, or
// -DURATION before now) and --range.
func (f *promFlags) window(until string) (end time.Time, r time.Duration, step time.Duration, err error) {
	now := time.Now().UTC()
	end = now
	if until != "" {
		if end, err = parseWhen(until, now); err != nil {
			return end, 0, 0, fmt.Errorf("--until %w", err)
		}
	}
	if r, err = parseRetention(f.rangeS); err != nil || r <= 0 {
		return end, 0, 0, fmt.Errorf("--range %q: want a duration such as 14d, 36h", f.rangeS)
	}
	if f.step != "" {
		if step, err = parseRetention(f.step); err != nil || step <= 0 {
			return end, 0, 0, fmt.Errorf("--step %q: want a duration such as 5m", f.step)
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(f.match), "{") && strings.TrimSpace(f.match) != "" && !strings.Contains(f.match, "=") {
		return end, 0, 0, fmt.Errorf("--match %q: want a label selector such as '{job=\"node\"}'", f.match)
	}
	return end, r, step, nil
}

// printWarnings shows the server's partial-data warnings on stderr.
func printWarnings(w io.Writer, ws []string) {
	for _, x := range ws {
		_, _ = fmt.Fprintln(w, "memdoctor: warning from prometheus (results may be partial):", termsafe.Escape(x))
	}
}

func promContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
