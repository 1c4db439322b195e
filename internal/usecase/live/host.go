// Package live is memdoctor's use cases on this host now (or a directory
// laid out like / and a capture archive, read the same way): check, with
// its focus, its culprits and the runtimes it reads, and capture.
package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/treat"
)

// Bars start the display of a long read's progress (label says what is
// read) and return its update and what ends it: the type of history.Bars.
type Bars = collect.Bars

// Host is what a read command reads: the live host, a directory laid out
// like / (--root), or a capture archive (--capture).
type Host struct {
	fs   procfs.FS
	name string
	// taken is when the data was read (zero for the live host: now).
	taken time.Time
	live  bool
	// runtimeRoot is where the runtimes' state (pod and container names)
	// is read below: "/" live, the --root directory; "" for a capture
	// (which holds none).
	runtimeRoot string
}

// OpenHost opens the host to read: the capture archive when given, else
// the directory root when given, else the live host.
func OpenHost(root, capturePath string) (*Host, error) {
	switch {
	case capturePath != "":
		fsys, prov, err := capture.LoadFile(capturePath)
		if err != nil {
			return nil, fmt.Errorf("reading capture: %w", err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		return &Host{pfs, "capture " + capturePath, prov.Time, false, ""}, nil
	case root != "":
		if st, err := os.Stat(root); err == nil && !st.IsDir() {
			return nil, fmt.Errorf("--root %s is a file; for an archive use --capture", root)
		}
		fsys, prov, err := capture.OpenDir(root)
		if err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		}
		pfs := procfs.NewFSFrom(fsys, prov.PageSize)
		pfs.GlibcBanner = prov.Glibc
		return &Host{pfs, "root " + root, prov.Time, false, root}, nil
	}
	return &Host{fs: procfs.NewFS("/"), name: "live", live: true, runtimeRoot: "/"}, nil
}

// Live says whether the host is this one, now.
func (h *Host) Live() bool { return h.live }

// now returns the sample time to use: the capture's time when replaying.
func (h *Host) now() func() time.Time {
	if h.taken.IsZero() {
		return time.Now
	}
	return func() time.Time { return h.taken }
}

// CheckOptions are check's.
type CheckOptions struct {
	// Top is how many processes, cgroups and slab caches to read in
	// detail.
	Top int
	// Runtimes (validated) and Focus (parsed); nil: none.
	Runtimes *Runtimes
	Focus    *Focus
	// MallocN reads the allocator state of the MallocN largest glibc
	// processes (live host only), each within MallocTimeout.
	MallocN       int
	MallocTimeout time.Duration
	// Log is where what is done to processes is said (stderr).
	Log io.Writer
	// Bars draw the progress of the GC interval (nil: none).
	Bars Bars
	// Culprits: the cgroup trace before the reading and the page scan
	// after it (nil: neither).
	Culprits *Culprits
	// RuntimeRoot, when set, is the directory the runtimes' state (pod
	// and container names) is read below instead of the host's.
	RuntimeRoot string
	// Interruptible (nil: nothing) is called before the work a signal
	// should end early rather than kill (the trace, the allocators'
	// state, the GC interval), for ctx to be cancelled by one from then
	// on: a handler installed at the start cost every run two threads.
	Interruptible func()
}

// Check reads the host once (twice, o.Runtimes.Interval apart, when
// runtimes have GC data to measure), runs every rule and ranks the
// processes by the focus' key.
func Check(ctx context.Context, h *Host, o CheckOptions) (*model.Report, error) {
	rt, fo := o.Runtimes, o.Focus
	if rt == nil {
		rt = &Runtimes{}
	}
	if fo == nil {
		fo = &Focus{Sort: "pss"}
	}
	rr := h.runtimeRoot
	if o.RuntimeRoot != "" {
		rr = o.RuntimeRoot
	}
	names := cgroups.NewRuntime(rr)
	if err := fo.check(h.fs, h.live, names); err != nil {
		return nil, err
	}
	opt := collect.Profile(collect.Check, o.Top, h.live)
	opt.Names, opt.Now = names, h.now()
	opt.Scrape, opt.ScrapeTimeout, opt.ScrapeAuth, opt.Discover = rt.URLs, rt.Timeout, rt.Auth, rt.Discover
	opt.Focus, opt.SortBy, opt.UserTotals, opt.FocusCgroup = fo.parsed, fo.Sort, fo.Users, fo.cgroup
	opt.DotNetPort, opt.GCInterval = h.live && rt.Interval > 0, rt.Interval
	cu := o.Culprits
	if cu == nil {
		cu = &Culprits{}
	}
	interruptible := o.Interruptible
	if interruptible == nil {
		interruptible = func() {}
	}
	if cu.Trace > 0 || cu.ScanPages {
		interruptible()
	}
	if err := cu.before(ctx, h.live, o.Log); err != nil {
		return nil, err
	}
	start := time.Now() // the cost is the reading's, not the trace's
	res, err := collect.Collect(h.fs, opt)
	if err != nil {
		return nil, fmt.Errorf("%w (is this a Linux host with /proc mounted? use --root or --capture for saved data)", err)
	}
	notes, err := cu.after(ctx, h.live, &res.Snapshot)
	if err != nil {
		return nil, err
	}
	res.Notes = append(res.Notes, notes...)
	if o.MallocN > 0 {
		if !h.live {
			return nil, fmt.Errorf("--malloc reads running processes: it cannot be used with --root or --capture")
		}
		interruptible()
		mctx, cancel := context.WithTimeout(ctx, time.Duration(o.MallocN+1)*o.MallocTimeout)
		res.Notes = append(res.Notes, treat.InspectAllocators(mctx, &res.Snapshot, o.MallocN, o.MallocTimeout, o.Log)...)
		cancel()
	}
	var rep *model.Report
	if collect.ReadsRuntimesAgain(opt, res) {
		interruptible()
	}
	if earlier := collect.ReadRuntimesAgain(ctx, h.fs, opt, res, o.Bars); earlier != nil {
		rep = diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Earlier: earlier, Source: h.name, Notes: res.Notes})
	} else {
		rep = diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Source: h.name, Notes: res.Notes})
	}
	if h.live {
		rep.Cost = costOf(res, time.Since(start))
	}
	fo.apply(rep, res)
	return rep, nil
}

func costOf(res *collect.Result, d time.Duration) *model.Cost {
	c := &model.Cost{DurationSeconds: d.Seconds(), Collectors: map[string]float64{}}
	for _, t := range res.Timings {
		c.Collectors[t.Collector] = t.Duration.Seconds()
	}
	c.SmapsReads = int(res.Snapshot.Value("memdoctor_smaps_rollup_reads"))
	c.Vanished = int(res.Snapshot.Value("memdoctor_processes_vanished"))
	return c
}

// Fails says whether a finding is of severity threshold or worse ("":
// never).
func Fails(findings []model.Finding, threshold model.Severity) bool {
	if threshold == "" {
		return false
	}
	for _, f := range findings {
		if f.Severity.Rank() >= threshold.Rank() {
			return true
		}
	}
	return false
}

// ParseFailOn reads --fail-on: "" for none, else the lowest severity that
// makes the command exit with status 2.
func ParseFailOn(s string) (model.Severity, error) {
	switch s {
	case "", "none":
		return "", nil
	case "info", "warning", "critical":
		return model.Severity(s), nil
	}
	return "", fmt.Errorf("--fail-on %q: want none, info, warning or critical", s)
}

// Captured is what Capture wrote.
type Captured struct {
	// Path is the file written ("" for a writer).
	Path  string
	Files int
	Notes []string
}

// Capture reads the live host as check does and saves every file it read
// into one archive (to w when out is "-", else to out, or to
// memdoctor-HOST-TIME.txtar when out is ""). tool names the program in
// the provenance header.
func Capture(top int, note, tool string, noRedact bool, out string, w io.Writer) (*Captured, error) {
	live := procfs.NewFS("/")
	rec := capture.NewRecorder(live.Sys(), capture.RecordOptions{})
	fsys := procfs.NewFSFrom(rec, live.PageSize)
	res, err := collect.Collect(fsys, collect.Profile(collect.Capture, top, true))
	if err != nil {
		return nil, err
	}
	prov := capture.Provenance{
		PageSize: live.PageSize,
		Time:     res.Snapshot.Time.UTC().Truncate(time.Second),
		Tool:     tool,
		Note:     note,
		Arch:     runtime.GOARCH,
	}
	if u := res.Snapshot.Select("node_uname_info"); len(u) > 0 {
		prov.Kernel = u[0].Labels.Get("release")
		if m := u[0].Labels.Get("machine"); m != "" {
			prov.Arch = m
		}
	}
	if c := res.Snapshot.Select("memdoctor_cgroup_info"); len(c) > 0 && c[0].Labels.Get("mode") != "none" {
		prov.CgroupMode = c[0].Labels.Get("mode")
	}
	if g := res.Snapshot.Select("memdoctor_glibc_info"); len(g) > 0 {
		prov.Glibc = g[0].Labels.Get("banner")
	}
	contents := rec.Contents()
	wopt := capture.WriteOptions{NoRedact: noRedact}
	if out == "-" {
		return &Captured{}, capture.Write(w, prov, contents, wopt)
	}
	if out == "" {
		host := "host"
		if u := res.Snapshot.Select("node_uname_info"); len(u) > 0 && u[0].Labels.Get("nodename") != "" {
			host = model.HostName(u[0].Labels.Get("nodename"))
		}
		out = fmt.Sprintf("memdoctor-%s-%s.txtar", sanitize(host), prov.Time.Format("20060102T150405Z"))
	}
	if err := capture.WriteFile(out, prov, contents, wopt); err != nil {
		return nil, fmt.Errorf("writing capture: %w", err)
	}
	c := &Captured{Path: out, Files: len(contents.Files)}
	for _, n := range res.Notes {
		c.Notes = append(c.Notes, n.Source+": "+n.Message)
	}
	return c, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r < 32 {
			return '_'
		}
		return r
	}, s)
}
