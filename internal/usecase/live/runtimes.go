package live

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
)

// Runtimes select the language runtimes check and record read besides
// the JVMs they find by themselves: --scrape URLs, their credentials
// (from files) and the interval between check's two readings.
type Runtimes struct {
	URLs                          []string
	TokenFile, User, PasswordFile string
	Timeout, Interval             time.Duration
	// Discover reads the /metrics that detected runtimes serve on their
	// own loopback ports (--discover).
	Discover bool
	// Auth is what Validate read from the files.
	Auth runtimes.Auth
}

// Validate checks the URLs, the timeout and the interval, and reads the
// credentials.
func (f *Runtimes) Validate() error {
	for _, u := range f.URLs {
		if err := runtimes.ValidateURL(u); err != nil {
			return err
		}
	}
	if f.Timeout <= 0 {
		return fmt.Errorf("--scrape-timeout %v: want a positive duration", f.Timeout)
	}
	if err := f.readAuth(); err != nil {
		return err
	}
	if f.Interval < 0 || f.Interval > 5*time.Minute {
		return fmt.Errorf("--gc-interval %v: want 0 to 5m", f.Interval)
	}
	return nil
}

// secondReading reads the runtimes again after the GC interval (watching
// JVMs' perf data for the cause of each collection meanwhile, and running
// a GC session on each .NET process read through its port), replaces the
// first reading's runtime series in res with the second, and returns a
// scrape of the first reading. It returns nil when there is nothing to
// measure twice.
func (f *Runtimes) secondReading(ctx context.Context, fsys procfs.FS, opt collect.Options, res *collect.Result, bars Bars) *sample.Snapshot {
	first := res.Runtimes
	if f.Interval <= 0 || first == nil || !hasGC(first) {
		return nil
	}
	earlier := &sample.Snapshot{Time: res.Snapshot.Time}
	for _, m := range first.Metrics() {
		earlier.AddMetric(m)
	}
	watch := runtimes.NewWatch(fsys, first)
	// Allocation ticks (verbose) for the LOH allocation rate.
	dn := runtimes.StartDotNet(ctx, first, true)
	update, done := func(int64, int64) {}, func() {}
	if bars != nil {
		update, done = bars("measuring GC rates")
	}
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	for time.Since(start) < f.Interval && ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		if !watch.Empty() {
			watch.Poll(fsys)
		}
		update(int64(time.Since(start)/time.Millisecond), int64(f.Interval/time.Millisecond))
	}
	tick.Stop()
	dn.Stop()
	done()
	ro := collect.RuntimeOptions(opt, &res.Snapshot)
	ro.PIDs = nil
	ro.NoHostJVMs = true
	for _, rd := range first.Readings {
		// JVMs read from hsperfdata, and the processes behind scrape
		// targets (so that the second reading matches them again)
		if rd.Source == "hsperfdata" || rd.Source == runtimes.SourceEventPipe || rd.Source == "scrape" && rd.PID > 0 {
			ro.PIDs = append(ro.PIDs, rd.PID)
		}
	}
	ro.Watch = watch
	ro.DotNet = dn
	second := runtimes.Read(context.Background(), fsys, ro)
	later := sample.Snapshot{Time: opt.Now(), Instance: res.Snapshot.Instance}
	for _, m := range res.Snapshot.Metrics {
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
	res.Snapshot = later
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
func (f *Runtimes) readAuth() error {
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
	case f.TokenFile != "" && (f.User != "" || f.PasswordFile != ""):
		return fmt.Errorf("--scrape-token-file and --scrape-user/--scrape-password-file: give one kind of credentials")
	case f.PasswordFile != "" && f.User == "":
		return fmt.Errorf("--scrape-password-file needs --scrape-user")
	case f.User != "" && f.PasswordFile == "":
		return fmt.Errorf("--scrape-user needs --scrape-password-file (a password is never given on the command line)")
	}
	var err error
	if f.TokenFile != "" {
		f.Auth.BearerToken, err = read("--scrape-token-file", f.TokenFile)
	}
	if f.User != "" {
		f.Auth.Username = f.User
		f.Auth.Password, err = read("--scrape-password-file", f.PasswordFile)
	}
	if err == nil && len(f.URLs) == 0 && (f.TokenFile != "" || f.User != "") {
		err = fmt.Errorf("scrape credentials given without --scrape URL")
	}
	return err
}
