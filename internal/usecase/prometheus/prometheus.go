// Package prometheus is memdoctor's use cases over a Prometheus-compatible
// server: connecting, fleet scans and their report pages, comparisons of
// two groups of hosts, baselines and the alerting rules.
package prometheus

import (
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
)

// PromServer says how to reach a Prometheus-compatible server
// (Prometheus, Thanos, Mimir, VictoriaMetrics).
type PromServer struct {
	URL, TokenFile, User, PasswordFile, CA string
	Insecure                               bool
	Timeout                                time.Duration
	// Retries of a failed request (0: none).
	Retries int
	// Deadline bounds a whole read (0: none); checked by Connect,
	// applied by Session.
	Deadline time.Duration
}

// Connect checks the options and returns a client of the server.
func Connect(o PromServer) (*prom.Client, error) {
	if o.Deadline < 0 {
		return nil, fmt.Errorf("--prometheus-deadline %s: give a duration, or 0 for none", o.Deadline)
	}
	if o.Retries < 0 {
		return nil, fmt.Errorf("--prometheus-retries %d: give 0 (no retry) or more", o.Retries)
	}
	retries := o.Retries
	if retries == 0 {
		retries = -1 // prom.Options: 0 is the default (3), negative is none
	}
	return prom.New(prom.Options{URL: o.URL, BearerTokenFile: o.TokenFile, Username: o.User, PasswordFile: o.PasswordFile,
		CAFile: o.CA, InsecureSkipVerify: o.Insecure, Timeout: o.Timeout, Retries: retries})
}

// ParseMatch parses a label selector as Prometheus reads one and returns
// its canonical form.
func ParseMatch(s string) (string, error) { return promql.ParseMatch(s) }
