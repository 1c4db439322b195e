package runtimes

// Reading every runtime memdoctor can see on a host: the --scrape targets,
// every JVM with a perf-data file (this mount namespace's /tmp, and each
// listed process' own /tmp through /proc/PID/root), and the runtime of each
// listed process (the largest ones), with a hint when its GC state is not
// visible.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/redact"

	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/safeio"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// Options say what to read.
type Options struct {
	// URLs are Prometheus endpoints of applications.
	URLs    []string
	Scraper Scraper
	// PIDs are processes whose runtime to detect (the top processes).
	PIDs []int
	// Maps holds mappings already read this scrape (optional), so that
	// no /proc/PID/maps is read twice.
	Maps map[int][]procfs.Mapping
	// GoVersions, when set, answers for the executables already read
	// this scrape: the Go version of pid's build information ("" when
	// none); known false leaves the executable to be read here.
	GoVersions func(pid int) (version string, known bool)
	// Comms names PIDs (optional).
	Comms map[int]string
	// Watch, when not nil, adds the explicit collections it counted to the
	// JVM readings.
	Watch *Watch
	// NoHostJVMs skips looking for JVMs in /tmp/hsperfdata_*.
	NoHostJVMs bool
	// DotNetPort reads .NET processes through their diagnostics port (a
	// live host only): zero counters, the start of the sessions a
	// DotNetWatch then runs; DotNet, when not nil, is that watch, whose
	// sessions make the readings.
	DotNetPort bool
	DotNet     *DotNetWatch
	// Discover asks the loopback ports each process of PIDs listens on
	// for /metrics when its runtime has no other GC reading (see
	// discover.go). Live hosts only.
	Discover bool
	// DiscoverMemo, when not nil, carries discovery's answers from one
	// reading to the next (the recorder's).
	DiscoverMemo *DiscoverMemo
	// ExeMemo, when not nil, keeps the Go version of the executables read
	// from one reading to the next (the recorder's).
	ExeMemo *ExeMemo
	// KnownJVMs are PIDs known to be JVMs (a second reading of JVMs the
	// first read through their perf data): read so again without their
	// mappings read and the runtime detected anew; one that cannot be is
	// noted, not left out unsaid.
	KnownJVMs map[int]bool
	// OwnerMemo, when not nil, keeps the owner of each scrape target's
	// socket found outside PIDs from one reading to the next (the
	// recorder's).
	OwnerMemo *OwnerMemo
	// Served holds, for a second reading of the same processes (check's,
	// --gc-interval after its first), the URL at which discovery found
	// each pid's page: that URL is asked again, and the process' sockets
	// are not read again.
	Served map[int]string
}

// Result is every reading plus notes on what could not be read.
type Result struct {
	Readings []*Reading
	Notes    []sample.Note
}

// Metrics flattens the readings.
func (r *Result) Metrics() []sample.Metric {
	var out []sample.Metric
	for _, rd := range r.Readings {
		out = append(out, rd.Metrics()...)
	}
	return out
}

func (r *Result) note(source, msg, hides, fix string) {
	r.Notes = append(r.Notes, sample.Note{Source: source, Message: msg, Hides: hides, Fix: fix})
}

// Read reads every source.
func Read(ctx context.Context, fsys procfs.FS, opt Options) *Result {
	res := &Result{}
	for _, raw := range opt.URLs {
		// The URL as stored and shown: no password, no token.
		u := redact.URL(raw)
		fams, err := opt.Scraper.Fetch(ctx, raw)
		if err != nil {
			res.note("scrape "+u, strings.TrimPrefix(err.Error(), "scrape "+u+": "), "the runtime's garbage collector state", "check the URL with curl "+u)
			continue
		}
		rd, ok := Normalize(fams, u)
		if !ok {
			res.note("scrape "+u, fmt.Sprintf("%d series, none a known runtime's GC metrics (Go, Python, JVM, .NET, Ruby, Node)", len(fams)),
				"the runtime's garbage collector state", "point --scrape at the application's own /metrics endpoint")
			continue
		}
		res.Readings = append(res.Readings, rd)
	}
	pids := map[int]bool{}
	for _, p := range opt.PIDs {
		pids[p] = true
	}
	if !opt.NoHostJVMs {
		for _, p := range HostJVMs(fsys) {
			pids[p] = true
		}
	}
	order := make([]int, 0, len(pids))
	for p := range pids {
		order = append(order, p)
	}
	sort.Ints(order)
	byPID := map[int]*Reading{}
	if opt.ExeMemo != nil {
		opt.ExeMemo.begin()
		defer opt.ExeMemo.end()
	}
	for _, pid := range order {
		det, ok := Detection{Runtime: JVM}, opt.KnownJVMs[pid]
		if !ok {
			maps, known := opt.Maps[pid]
			if !known {
				var err error
				if maps, err = fsys.ProcMaps(pid); err != nil {
					continue // gone, or not ours to read: the process table says so already
				}
			}
			if det, ok = detectPID(fsys, pid, maps, opt.GoVersions, opt.ExeMemo); !ok {
				continue
			}
		}
		comm := opt.Comms[pid]
		if comm == "" {
			comm, _ = fsys.ProcComm(pid)
		}
		if det.Runtime == JVM {
			rd, err := readJVM(fsys, pid, comm)
			if err == nil {
				if opt.Watch != nil {
					opt.Watch.addTo(rd)
				}
				res.Readings = append(res.Readings, rd)
				byPID[pid] = rd
				continue
			}
			res.note("hsperfdata pid "+strconv.Itoa(pid), err.Error(), "the JVM's garbage collector state", Hint(JVM))
			continue
		}
		if det.Runtime == DotNet && (opt.DotNetPort || opt.DotNet != nil) && liveRoot(fsys) {
			rd, note, err := dotnetReading(fsys, opt.DotNet, pid, comm, det)
			if note != "" {
				res.note("dotnet ipc pid "+strconv.Itoa(pid), fmt.Sprintf("%s (pid %d): %s", comm, pid, note),
					"the process' command line, OS and architecture as its runtime reports them", "")
			}
			if err == nil {
				res.Readings = append(res.Readings, rd)
				byPID[pid] = rd
				continue
			}
			res.note("dotnet pid "+strconv.Itoa(pid), fmt.Sprintf("%s (pid %d): %v", comm, pid, err),
				"the .NET garbage collector's state (collections and their reasons, pauses, heap sizes)", Hint(DotNet))
			continue
		}
		rd := &Reading{Target: "pid/" + strconv.Itoa(pid), Runtime: det.Runtime, Version: det.Version, Source: "maps", PID: pid, Comm: comm}
		res.Readings = append(res.Readings, rd)
		byPID[pid] = rd
	}
	unmatched := res.oneEach(fsys, order, byPID, opt.OwnerMemo)
	asked := map[*Reading]discovery{}
	if opt.Discover {
		var dets []*Reading
		for _, rd := range res.Readings {
			if rd.Source == "maps" && rd.PID > 0 {
				dets = append(dets, rd)
			}
		}
		found := discoverAll(ctx, fsys, dets, opt.DiscoverMemo, opt.Served)
		for i, det := range dets {
			if found[i].reading == nil {
				asked[det] = found[i]
				continue
			}
			for j, rd := range res.Readings {
				if rd == det {
					res.Readings[j] = found[i].reading
				}
			}
		}
	}
	hidden := map[string][]string{}
	for _, rd := range res.Readings {
		if rd.Source == "maps" {
			who := fmt.Sprintf("%s (pid %d", rd.Comm, rd.PID)
			if d, ok := asked[rd]; ok {
				switch {
				case len(d.tried) > 0:
					who += "; its /metrics asked: " + strings.Join(d.tried, ", ")
				case d.why != "":
					who += "; " + d.why + ": pass its URL with --scrape"
				}
			}
			hidden[rd.Runtime] = append(hidden[rd.Runtime], who+")")
		}
	}
	kinds := make([]string, 0, len(hidden))
	for k := range hidden {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		unless := ""
		if unmatched > 0 {
			unless = " (unless among the --scrape targets memdoctor could not match to a process)"
		}
		res.note("runtime "+k, fmt.Sprintf("%s runtime without visible GC metrics: %s%s", k, strings.Join(hidden[k], ", "), unless),
			"its garbage collector state (time in GC, collections, live heap)", Hint(k))
	}
	return res
}

// oneEach makes one reading of each process: a scrape target served by a
// process that was also read directly (hsperfdata, or detected from its
// mappings) is matched to it by the owner of its listening socket, and of
// the two readings the richer one stays, naming the other in Also. It
// returns how many scrape readings matched no process. A target served by
// none of pids is looked for among every process (see ownerAnywhere).
func (r *Result) oneEach(fsys procfs.FS, pids []int, byPID map[int]*Reading, memo *OwnerMemo) (unmatched int) {
	drop := map[*Reading]bool{}
	for _, sr := range r.Readings {
		if sr.Source != "scrape" {
			continue
		}
		ip, port, ok := targetAddr(sr.Target)
		if !ok {
			unmatched++
			continue
		}
		inodes := listeners(fsys, ip, port)
		var owners []int
		if len(inodes) > 0 {
			owners = socketOwners(fsys, pids, inodes)
			if len(owners) == 0 {
				owners = ownerAnywhere(fsys, inodes, memo)
			}
		}
		owner := 0
		for _, p := range owners {
			if byPID[p] != nil && !drop[byPID[p]] {
				owner = p
				break
			}
		}
		if owner == 0 && len(owners) > 0 {
			owner = owners[0]
		}
		if owner == 0 {
			unmatched++
			continue
		}
		other := byPID[owner]
		sr.PID = owner
		if other == nil || drop[other] {
			if c, err := fsys.ProcComm(owner); err == nil {
				sr.Comm = c
			}
			continue
		}
		sr.Comm = other.Comm
		if other.Runtime == sr.Runtime && other.richness() > sr.richness() {
			drop[sr] = true
			other.Also = sr.Target
		} else {
			drop[other] = true
			sr.Also = other.Target
		}
	}
	if len(drop) > 0 {
		kept := r.Readings[:0]
		for _, rd := range r.Readings {
			if !drop[rd] {
				kept = append(kept, rd)
			}
		}
		r.Readings = kept
	}
	return unmatched
}

// HostJVMs lists the JVMs with a perf-data file in this mount namespace's
// /tmp (every user's hsperfdata_<user> directory).
func HostJVMs(fsys procfs.FS) []int {
	// Listed by name, nothing made for the other entries of a /tmp that
	// may hold hundreds.
	var dirs []string
	if fsys.EachName("tmp", func(name string) {
		if strings.HasPrefix(name, "hsperfdata_") {
			dirs = append(dirs, strings.Clone(name))
		}
	}) != nil {
		return nil
	}
	slices.Sort(dirs) // in the order a sorted listing gave them
	var out []int
	for _, d := range dirs {
		var files []string
		_ = fsys.EachName("tmp/"+d, func(name string) { // unreadable: none from it
			files = append(files, strings.Clone(name))
		})
		slices.Sort(files)
		for _, f := range files {
			pid, err := strconv.Atoi(f)
			if err == nil && pid > 0 && fsys.Exists("proc/"+f) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// nsPID returns the process' pid in its own pid namespace (NSpid's last
// field, procfs.OwnPID), or pid.
func nsPID(fsys procfs.FS, pid int) int {
	st, err := fsys.ProcStatusBrief(pid)
	if err != nil {
		return pid
	}
	return st.OwnPID(pid)
}

// detectPID detects the runtime of pid from its mappings and, for Go, its
// executable's build information.
func detectPID(fsys procfs.FS, pid int, maps []procfs.Mapping, goVersions func(int) (string, bool), memo *ExeMemo) (Detection, bool) {
	if goVersions != nil {
		if v, known := goVersions(pid); known {
			return detect(maps, func() (string, bool) { return v, v != "" })
		}
	}
	var exe io.ReaderAt
	f, err := fsys.Sys().Open(path.Join("proc", strconv.Itoa(pid), "exe"))
	if err == nil {
		defer func() { _ = f.Close() }() // read-only
		if ra, ok := f.(io.ReaderAt); ok {
			exe = ra
		}
	}
	if memo == nil || exe == nil {
		return Detect(maps, exe)
	}
	return detect(maps, func() (string, bool) { return memo.goVersion(f, exe) })
}

// HsperfPath finds a JVM's perf-data file: through /proc/PID/root (its own
// mount namespace, by its namespace pid), else this namespace's /tmp.
func HsperfPath(fsys procfs.FS, pid int) (string, error) {
	ns := strconv.Itoa(nsPID(fsys, pid))
	for _, root := range []string{path.Join("proc", strconv.Itoa(pid), "root", "tmp"), "tmp"} {
		dirs, err := fsys.ReadDir(root)
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if !strings.HasPrefix(d.Name(), "hsperfdata_") {
				continue
			}
			p := root + "/" + d.Name() + "/" + ns
			if root == "tmp" {
				p = root + "/" + d.Name() + "/" + strconv.Itoa(pid)
			}
			if fsys.Exists(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("JVM pid %d has no hsperfdata file (run as its user or root; or the JVM runs with -XX:-UsePerfData)", pid)
}

// maxHsperf bounds a perf-data file (the JVM's default is 32 KiB,
// -XX:PerfDataMemorySize raises it).
const maxHsperf = 64 << 20

// readHsperf reads the perf-data file p (found by HsperfPath) of JVM pid.
// On a live host the file is the target's, in the target's mount
// namespace, where it may have put anything: it is opened inside the
// process' root (or, for this namespace's /tmp, inside ours) without
// following any link, never blocking, and must be a regular file owned by
// the process' user. memdoctor, often root, never reads another file in
// its place (a link to a root-only file, say), nor tells its size.
func readHsperf(fsys procfs.FS, pid int, p string) ([]byte, error) {
	d, live := fsys.Sys().(safeio.DirFS)
	if !live || d.Root() != "/" {
		return fsys.ReadFile(p) // a capture: the copies memdoctor made
	}
	root, name := "/", p
	proc := path.Join("proc", strconv.Itoa(pid), "root") + "/" // the process' root
	if rest, ok := strings.CutPrefix(p, proc); ok {
		root, name = "/"+proc, rest
	}
	uids, err := procUIDs(fsys, pid)
	if err != nil {
		return nil, err
	}
	f, info, err := safeio.OpenInRoot(root, name, maxHsperf)
	if err != nil {
		return nil, fmt.Errorf("%w (memdoctor reads only the JVM's own regular file, through no symbolic link)", err)
	}
	defer func() { _ = f.Close() }() // read-only
	if !slices.Contains(uids, info.UID) {
		return nil, fmt.Errorf("owned by uid %d, not by the JVM's user (uid %s): not the JVM's own file, left unread", info.UID, strings.Join(uidStrings(uids), ", "))
	}
	return safeio.ReadAll(f, maxHsperf)
}

// procUIDs are the real and effective user ids of process pid.
func procUIDs(fsys procfs.FS, pid int) ([]uint32, error) {
	b, err := fsys.ReadFile("proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			var out []uint32
			for _, f := range strings.Fields(v)[:min(2, len(strings.Fields(v)))] {
				u, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("pid %d: Uid %q", pid, v)
				}
				out = append(out, uint32(u))
			}
			if len(out) > 0 {
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("pid %d: no Uid in its status", pid)
}

func uidStrings(uids []uint32) []string {
	out := make([]string, len(uids))
	for i, u := range uids {
		out[i] = strconv.FormatUint(uint64(u), 10)
	}
	return out
}

func readJVM(fsys procfs.FS, pid int, comm string) (*Reading, error) {
	path, err := HsperfPath(fsys, pid)
	if err != nil {
		return nil, err
	}
	var pd *PerfData
	for try := 0; ; try++ {
		b, err := readHsperf(fsys, pid, path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if pd, err = ParseHsperf(b); err == nil {
			break
		}
		// The JVM writes the file while it is read: an entry read half
		// written parses as corrupt. Once more, a moment later, before
		// the reading is given up.
		if d, live := fsys.Sys().(safeio.DirFS); !live || d.Root() != "/" || try > 0 || errors.Is(err, ErrNotHsperf) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	rd, err := FromPerfData(pd, pid, comm)
	if err != nil {
		return nil, err
	}
	if st, err := fsys.ProcStatus(pid); err == nil {
		if v, ok := st.Get("VmRSS"); ok {
			rd.add(Resident, float64(v))
		}
	}
	return rd, nil
}

// Watch polls JVM perf-data files between two readings and attributes each
// new collection to the cause the JVM recorded for it, counting the
// explicit ones (System.gc(), jcmd GC.run, heap dumps). A perf-data file
// keeps only the last cause, so collections closer together than the poll
// interval share one cause: the count is a sample, exact when collections
// are rarer than polls.
type Watch struct {
	paths  map[int]string
	last   map[int]GCEvents
	counts map[int]map[string]float64
	polls  int
}

// NewWatch starts watching the JVMs of a reading result.
func NewWatch(fsys procfs.FS, res *Result) *Watch {
	w := &Watch{paths: map[int]string{}, last: map[int]GCEvents{}, counts: map[int]map[string]float64{}}
	for _, rd := range res.Readings {
		if rd.Runtime != JVM || rd.Source != "hsperfdata" {
			continue
		}
		if p, err := HsperfPath(fsys, rd.PID); err == nil {
			w.paths[rd.PID] = p
			w.counts[rd.PID] = map[string]float64{}
		}
	}
	w.Poll(fsys)
	return w
}

// Empty says whether there is nothing to watch.
func (w *Watch) Empty() bool { return len(w.paths) == 0 }

// Poll reads every watched file once.
func (w *Watch) Poll(fsys procfs.FS) {
	w.polls++
	for pid, p := range w.paths {
		b, err := readHsperf(fsys, pid, p)
		if err != nil {
			continue
		}
		pd, err := ParseHsperf(b)
		if err != nil {
			continue
		}
		ev := PerfEvents(pd)
		if prev, ok := w.last[pid]; ok && ExplicitJVMCause(ev.Cause) &&
			(ev.Invocations > prev.Invocations || ev.Cause != prev.Cause) {
			w.counts[pid][ev.Cause]++
		}
		w.last[pid] = ev
	}
}

func (w *Watch) addTo(rd *Reading) {
	c, ok := w.counts[rd.PID]
	if !ok || w.polls < 2 {
		return
	}
	rd.add(Induced, c["System.gc()"], "cause", "System.gc()")
	for cause, n := range c {
		if cause != "System.gc()" {
			rd.add(Induced, n, "cause", cause)
		}
	}
}
