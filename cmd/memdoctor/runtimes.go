package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/safeio"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/spf13/cobra"
)

// runtimeFlags select the language runtimes check and record read besides
// the JVMs they find by themselves.
type runtimeFlags struct {
	urls []string
	// Credentials for every --scrape URL, from files.
	tokenFile, user, passwordFile string
	auth                          runtimes.Auth
	timeout                       time.Duration
	interval                      time.Duration
}

func (f *runtimeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.urls, "scrape", nil, "read a service's runtime GC metrics from its Prometheus `URL` (repeatable; Go, Python, JVM, .NET, Ruby and Node client names)")
	cmd.Flags().DurationVar(&f.timeout, "scrape-timeout", 5*time.Second, "time limit of each scrape")
	cmd.Flags().StringVar(&f.tokenFile, "scrape-token-file", "", "send the bearer token in `FILE` with every scrape")
	cmd.Flags().StringVar(&f.user, "scrape-user", "", "basic-auth `USER` for every scrape (password from --scrape-password-file)")
	cmd.Flags().StringVar(&f.passwordFile, "scrape-password-file", "", "basic-auth password for every scrape, read from `FILE`")
	if cmd.Name() == "check" {
		cmd.Flags().DurationVar(&f.interval, "gc-interval", 3*time.Second, "read runtimes twice this far apart to measure GC rates (0: once, lifetime averages only)")
	}
}

func (f *runtimeFlags) validate() error {
	for _, u := range f.urls {
		if err := runtimes.ValidateURL(u); err != nil {
			return err
		}
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--scrape-timeout %v: want a positive duration", f.timeout)
	}
	if err := f.readAuth(); err != nil {
		return err
	}
	if f.interval < 0 || f.interval > 5*time.Minute {
		return fmt.Errorf("--gc-interval %v: want 0 to 5m", f.interval)
	}
	return nil
}

// secondReading reads the runtimes again after the GC interval (watching
// JVMs' perf data for the cause of each collection meanwhile), replaces the
// first reading's runtime series in res with the second, and returns a
// scrape of the first reading. It returns nil when there is nothing to
// measure twice.
func (f *runtimeFlags) secondReading(cmd *cobra.Command, fsys procfs.FS, opt collect.Options, res *collect.Result) *sample.Scrape {
	first := res.Runtimes
	if f.interval <= 0 || first == nil || !hasGC(first) {
		return nil
	}
	earlier := &sample.Scrape{Time: res.Scrape.Time}
	for _, m := range first.Metrics() {
		earlier.AddMetric(m)
	}
	watch := runtimes.NewWatch(fsys, first)
	bar := newProgress(cmd.ErrOrStderr(), "measuring GC rates")
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	for time.Since(start) < f.interval {
		<-tick.C
		if !watch.Empty() {
			watch.Poll(fsys)
		}
		bar.update(int64(time.Since(start)/time.Millisecond), int64(f.interval/time.Millisecond))
	}
	tick.Stop()
	bar.done()
	ro := collect.RuntimeOptions(opt, &res.Scrape)
	ro.PIDs = nil
	ro.NoHostJVMs = true
	for _, rd := range first.Readings {
		// JVMs read from hsperfdata, and the processes behind scrape
		// targets (so that the second reading matches them again)
		if rd.Source == "hsperfdata" || rd.Source == "scrape" && rd.PID > 0 {
			ro.PIDs = append(ro.PIDs, rd.PID)
		}
	}
	ro.Watch = watch
	second := runtimes.Read(context.Background(), fsys, ro)
	later := sample.Scrape{Time: opt.Now(), Instance: res.Scrape.Instance}
	for _, m := range res.Scrape.Metrics {
		if !isRuntimeGC(m.Name) {
			later.AddMetric(m)
		}
	}
	// Detected-only runtimes (no GC data) keep their first reading.
	for _, rd := range first.Readings {
		if rd.Source == "maps" {
			for _, m := range rd.Metrics() {
				later.AddMetric(m)
			}
		}
	}
	for _, m := range second.Metrics() {
		later.AddMetric(m)
	}
	res.Scrape = later
	// A source that failed both times (a scrape target down) is noted once.
	noted := map[string]bool{}
	for _, n := range res.Notes {
		noted[n.Source] = true
	}
	for _, n := range second.Notes {
		if !noted[n.Source] {
			res.Notes = append(res.Notes, n)
		}
	}
	return earlier
}

func hasGC(r *runtimes.Result) bool {
	for _, rd := range r.Readings {
		if rd.Source != "maps" {
			return true
		}
	}
	return false
}

func isRuntimeGC(name string) bool { return strings.HasPrefix(name, "memdoctor_runtime_") }

// readAuth reads the scrape credentials from their files.
func (f *runtimeFlags) readAuth() error {
	read := func(flag, file string) (string, error) {
		b, err := safeio.ReadFile(file, safeio.Config)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%s %s: the file is empty", flag, file)
		}
		return v, nil
	}
	switch {
	case f.tokenFile != "" && (f.user != "" || f.passwordFile != ""):
		return fmt.Errorf("--scrape-token-file and --scrape-user/--scrape-password-file: give one kind of credentials")
	case f.passwordFile != "" && f.user == "":
		return fmt.Errorf("--scrape-password-file needs --scrape-user")
	case f.user != "" && f.passwordFile == "":
		return fmt.Errorf("--scrape-user needs --scrape-password-file (a password is never given on the command line)")
	}
	var err error
	if f.tokenFile != "" {
		f.auth.BearerToken, err = read("--scrape-token-file", f.tokenFile)
	}
	if f.user != "" {
		f.auth.Username = f.user
		f.auth.Password, err = read("--scrape-password-file", f.passwordFile)
	}
	if err == nil && len(f.urls) == 0 && (f.tokenFile != "" || f.user != "") {
		err = fmt.Errorf("scrape credentials given without --scrape URL")
	}
	return err
}
