package source

// Directories of /proc files saved by cron (incident 1): one file per kind
// and time, <kind>_<YYYY-MM-DD>.<HH:MM[:SS]>[.gz], flat or in per-day
// directories. The files of one time form one snapshot, collected exactly
// as a live host would be.

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memdoctor/memdoctor/internal/safeio"

	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// cronKinds maps file kinds to where the file goes below the snapshot root,
// longest kind first (so pressure_memory wins over pressure).
var cronKinds = []struct{ kind, path string }{
	{"pressure_memory", "proc/pressure/memory"},
	{"buddyinfo", "proc/buddyinfo"},
	{"osrelease", "proc/sys/kernel/osrelease"},
	{"slabinfo", "proc/slabinfo"},
	{"zoneinfo", "proc/zoneinfo"},
	{"cgroups", "proc/cgroups"},
	{"meminfo", "proc/meminfo"},
	{"pressure", "proc/pressure/memory"},
	{"version", "proc/version"},
	{"vmstat", "proc/vmstat"},
	{"stat", "proc/stat"},
}

const (
	cronLayout     = "2006-01-02.15:04"
	cronLayoutSecs = "2006-01-02.15:04:05"
)

// ErrCronName is matched by the error for a cron file name whose kind is
// known but whose timestamp is not YYYY-MM-DD.HH:MM[:SS].
var ErrCronName = errors.New("bad timestamp in cron file name")

// ParseCronName parses a cron file name: <kind>_<YYYY-MM-DD>.<HH:MM> or
// <kind>_<YYYY-MM-DD>.<HH:MM:SS>, with an optional ".gz" suffix, the time in
// loc (UTC when nil). ok is false for a name that is not a cron file at all
// (unknown kind, no timestamp); err is set (matching ErrCronName) for a
// known kind followed by a malformed or impossible timestamp.
func ParseCronName(name string, loc *time.Location) (kind string, t time.Time, gz, ok bool, err error) {
	if loc == nil {
		loc = time.UTC
	}
	base, gz := strings.CutSuffix(name, ".gz")
	for _, k := range cronKinds {
		rest, found := strings.CutPrefix(base, k.kind+"_")
		if !found || rest == "" || rest[0] < '0' || rest[0] > '9' {
			continue
		}
		layout := cronLayout
		if len(rest) > len(cronLayout) {
			layout = cronLayoutSecs
		}
		t, err := time.ParseInLocation(layout, rest, loc)
		if err != nil || len(rest) != len(layout) {
			return k.kind, time.Time{}, gz, false,
				fmt.Errorf("%w %q: want %s_YYYY-MM-DD.HH:MM or %s_YYYY-MM-DD.HH:MM:SS", ErrCronName, name, k.kind, k.kind)
		}
		return k.kind, t, gz, true, nil
	}
	return "", time.Time{}, gz, false, nil
}

func cronPath(kind string) string {
	for _, k := range cronKinds {
		if k.kind == kind {
			return k.path
		}
	}
	return ""
}

type cronFile struct {
	file string // real path
	gz   bool
}

type cronGroup struct {
	t     time.Time
	files map[string]cronFile // snapshot path -> file
}

type cronScan struct {
	groups  map[int64]*cronGroup
	unknown []string   // names not recognised (relative to the directory)
	bad     []error    // known kind, bad timestamp
	dups    [][]string // {kept, dropped}
}

// scanCronDir lists a cron directory and its per-day subdirectories.
func scanCronDir(dir string, loc *time.Location) (*cronScan, error) {
	sc := &cronScan{groups: map[int64]*cronGroup{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string // relative paths
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if isDirEntry(dir, e) {
			sub, err := os.ReadDir(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			for _, s := range sub {
				if strings.HasPrefix(s.Name(), ".") {
					continue
				}
				rel := name + "/" + s.Name()
				if isDirEntry(filepath.Join(dir, name), s) {
					sc.unknown = append(sc.unknown, rel+"/")
					continue
				}
				files = append(files, rel)
			}
			continue
		}
		files = append(files, name)
	}
	// Sorted so that the choice between duplicates is stable: a plain
	// file sorts before its .gz twin.
	slices.Sort(files)
	for _, rel := range files {
		kind, t, gz, ok, err := ParseCronName(filepath.Base(rel), loc)
		if err != nil {
			sc.bad = append(sc.bad, &InputError{File: filepath.Join(dir, rel), Err: err})
			continue
		}
		if !ok {
			sc.unknown = append(sc.unknown, rel)
			continue
		}
		g := sc.groups[t.UnixNano()]
		if g == nil {
			g = &cronGroup{t: t, files: map[string]cronFile{}}
			sc.groups[t.UnixNano()] = g
		}
		p := cronPath(kind)
		f := cronFile{file: filepath.Join(dir, rel), gz: gz}
		if prev, dup := g.files[p]; dup {
			sc.dups = append(sc.dups, []string{prev.file, f.file})
			continue
		}
		g.files[p] = f
	}
	return sc, nil
}

func isDirEntry(dir string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink != 0 {
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		return err == nil && st.IsDir()
	}
	return false
}

func readCron(dir string, opt IngestOptions, w *writer) error {
	sc, err := scanCronDir(dir, opt.Location)
	if err != nil {
		return err
	}
	if len(sc.bad) > 0 {
		if !opt.Lenient {
			return sc.bad[0]
		}
		for _, e := range sc.bad {
			w.skipped++
			w.notes.add(sample.Note{Source: dir, Message: "file skipped: " + e.Error()})
		}
	}
	if len(sc.unknown) > 0 {
		w.notes.add(sample.Note{Source: dir, Message: fmt.Sprintf("%d files not recognised, ignored: %s",
			len(sc.unknown), listSome(sc.unknown, 10))})
	}
	if len(sc.dups) > 0 {
		var dropped []string
		for _, d := range sc.dups {
			dropped = append(dropped, d[1]+" (kept "+filepath.Base(d[0])+")")
		}
		w.notes.add(sample.Note{Source: dir, Message: fmt.Sprintf("%d files duplicate another of the same kind and time, ignored: %s",
			len(dropped), listSome(dropped, 5))})
	}
	groups := make([]*cronGroup, 0, len(sc.groups))
	var noMeminfo []string
	for _, g := range sc.groups {
		if _, ok := g.files["proc/meminfo"]; !ok {
			noMeminfo = append(noMeminfo, g.t.Format(cronLayoutSecs))
			continue
		}
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *cronGroup) int { return a.t.Compare(b.t) })
	if len(noMeminfo) > 0 {
		slices.Sort(noMeminfo)
		w.skipped += len(noMeminfo)
		w.notes.add(sample.Note{Source: dir,
			Message: fmt.Sprintf("%d of %d timestamps have no meminfo file and were skipped: %s",
				len(noMeminfo), len(sc.groups), listSome(noMeminfo, 5)),
			Hides: "those snapshots", Fix: "save meminfo with every snapshot"})
	}
	if len(groups) == 0 {
		return fmt.Errorf("%s: no timestamp has a meminfo file (want meminfo_YYYY-MM-DD.HH:MM)", dir)
	}
	inst := opt.Instance
	if inst == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		inst = filepath.Base(abs)
	}
	pageSize := 4096
	prog := newProgress(opt.Progress, int64(len(groups)))
	b := newBatcher(w)
	total := len(groups)
	var firstSkip error
	skip := func(err error, what string) {
		w.skipped++
		if firstSkip == nil {
			firstSkip = err
		}
		w.notes.add(sample.Note{Source: dir, Message: what + " skipped: " + err.Error(), Hides: "that " + what})
	}
	err = collectOrdered(len(groups), opt.Workers,
		func(i int) (cronSnap, error) {
			g := groups[i]
			fsys, problems, err := cronFS(g, opt.Kernel, opt.Lenient)
			if err != nil {
				return cronSnap{}, err
			}
			co := collect.Profile(collect.Cron, 0, false)
			co.Now = func() time.Time { return g.t }
			res, err := collect.Collect(procfs.NewFSFrom(fsys, pageSize), co)
			if err != nil {
				return cronSnap{}, mapCollectError(err, g.files)
			}
			more, rest := fileProblems(res.Notes, g.files, fsys)
			res.Notes = rest
			return cronSnap{res, append(problems, more...)}, nil
		},
		func(i int, snap cronSnap, err error) error {
			prog.update(int64(i))
			if err != nil {
				if !opt.Lenient {
					return err
				}
				skip(err, "snapshot")
				return nil
			}
			for _, p := range snap.problems {
				if !opt.Lenient {
					return p
				}
				skip(p, "file")
			}
			for _, n := range snap.res.Notes {
				w.notes.addOf(cronNote(n), total)
			}
			dropTimings(&snap.res.Snapshot)
			return b.add(inst, &snap.res.Snapshot)
		})
	if err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return err
	}
	if w.snapshots == 0 && firstSkip != nil {
		return fmt.Errorf("%s: no snapshot could be read; the first problem: %w", dir, firstSkip)
	}
	prog.finish()
	return nil
}

// cronSnap is one collected snapshot and the files of it that were
// malformed (left out in lenient mode).
type cronSnap struct {
	res      *collect.Result
	problems []error
}

// cronNote says "no vmstat file" rather than "open proc/vmstat: file does
// not exist" when a kind is missing.
func cronNote(n sample.Note) sample.Note {
	for _, k := range cronKinds {
		if k.kind == "pressure" || k.kind == "version" {
			continue // pressure_memory and osrelease name them
		}
		if old := "open " + k.path + ": file does not exist"; strings.Contains(n.Message, old) {
			n.Message = strings.Replace(n.Message, old, "no "+k.kind+" file ("+k.kind+"_YYYY-MM-DD.HH:MM)", 1)
			break
		}
	}
	return n
}

// cronFS reads the files of one snapshot into an in-memory FS. A file that
// is empty, damaged or cut short (kernel files end with a newline) fails
// the snapshot; in lenient mode an optional one is left out instead and
// returned as a problem.
func cronFS(g *cronGroup, kernel string, lenient bool) (snapFS, []error, error) {
	m := make(snapFS, len(g.files)+1)
	var problems []error
	for p, f := range g.files {
		data, err := readMaybeGz(f.file, f.gz)
		if err == nil {
			err = checkComplete(f.file, data)
		}
		if err != nil {
			if !lenient || p == "proc/meminfo" {
				return nil, nil, err
			}
			problems = append(problems, err)
			continue
		}
		m[p] = data
	}
	if _, ok := m["proc/sys/kernel/osrelease"]; !ok {
		if v, ok := m["proc/version"]; ok {
			// "Linux version 5.0.0-1-amd64 (...) ..."
			if f := strings.Fields(string(v)); len(f) >= 3 && f[0] == "Linux" && f[1] == "version" {
				m["proc/sys/kernel/osrelease"] = []byte(f[2] + "\n")
			}
		}
	}
	if _, ok := m["proc/sys/kernel/osrelease"]; !ok && kernel != "" {
		m["proc/sys/kernel/osrelease"] = []byte(kernel + "\n")
	}
	return m, problems, nil
}

// checkComplete fails for an empty file or one whose last line has no
// newline: the kernel writes whole lines, so the copy was cut short.
func checkComplete(file string, data []byte) error {
	if len(data) == 0 {
		return malformed(file, 0, "empty file (the copy failed or was cut short)")
	}
	if data[len(data)-1] != '\n' {
		return malformed(file, bytes.Count(data, []byte("\n"))+1, "the file ends in the middle of a line (cut short?)")
	}
	return nil
}

func readMaybeGz(file string, gz bool) ([]byte, error) {
	data, err := safeio.ReadFile(file, safeio.Archive)
	if err != nil || !gz {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, &InputError{File: file, Err: fmt.Errorf("%w: gzip: %w", ErrMalformed, err)}
	}
	out, err := safeio.ReadAll(zr, safeio.Archive)
	if errors.Is(err, safeio.ErrTooLarge) {
		return nil, &InputError{File: file, Err: fmt.Errorf("%w: gzip data expands beyond %d MiB (not a cron snapshot)", ErrMalformed, safeio.Archive>>20)}
	}
	if err != nil {
		return nil, &InputError{File: file, Err: fmt.Errorf("%w: gzip data cut short or damaged: %w", ErrMalformed, err)}
	}
	return out, nil
}

// mapCollectError names the real file of a parse error.
func mapCollectError(err error, files map[string]cronFile) error {
	var pe *procfs.ParseError
	if errors.As(err, &pe) {
		if f, ok := files[pe.File]; ok {
			return &InputError{File: f.file, Line: pe.Line, Err: pe.Err}
		}
	}
	if f, ok := files["proc/meminfo"]; ok {
		return &InputError{File: f.file, Err: err}
	}
	return err
}

// fileProblems turns collector notes about files the snapshot has (so they
// were present but could not be parsed) into errors naming the real file,
// and returns the other notes.
func fileProblems(notes []sample.Note, files map[string]cronFile, present snapFS) (problems []error, rest []sample.Note) {
	rest = notes[:0:0]
next:
	for _, n := range notes {
		for p, f := range files {
			if _, ok := present[p]; !ok {
				continue // left out: its absence is no parse error
			}
			i := strings.Index(n.Message, p+": ")
			if i < 0 {
				continue
			}
			msg := n.Message[i+len(p)+2:]
			line := 0
			if s, ok := strings.CutPrefix(msg, "line "); ok {
				if j := strings.Index(s, ": "); j > 0 {
					if l, err := strconv.Atoi(s[:j]); err == nil {
						line, msg = l, s[j+2:]
					}
				}
			}
			problems = append(problems, &InputError{File: f.file, Line: line, Err: errors.New(msg)})
			continue next
		}
		rest = append(rest, n)
	}
	return problems, rest
}

// dropTimings removes the collectors' own durations: for saved data they
// time the parsing, not the host.
func dropTimings(s *sample.Snapshot) {
	s.Metrics = slices.DeleteFunc(s.Metrics, func(m sample.Metric) bool {
		return m.Name == "memdoctor_collector_duration_seconds" || m.Name == "memdoctor_smaps_rollup_seconds"
	})
	*s = sample.Snapshot{Time: s.Time, Instance: s.Instance, Metrics: s.Metrics}
}

func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", ... (%d more)", len(xs)-n)
}

// collectOrdered runs job for 0..n-1 on parallel workers and hands the
// results to emit in index order. It stops at the first error emit returns.
func collectOrdered[T any](n, workers int, job func(i int) (T, error), emit func(i int, res T, err error) error) error {
	if workers <= 0 {
		workers = defaultWorkers()
	}
	type result struct {
		res  T
		err  error
		done chan struct{}
	}
	window := max(4*workers, 256) // lets collection run ahead while a batch is appended
	results := make([]*result, n)
	for i := range results {
		results[i] = &result{done: make(chan struct{})}
	}
	var next atomic.Int64
	stop := make(chan struct{})
	sem := make(chan struct{}, window) // bounds results held ahead of emit
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				select {
				case sem <- struct{}{}:
				case <-stop:
					return
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					<-sem
					return
				}
				r := results[i]
				r.res, r.err = job(i)
				close(r.done)
			}
		})
	}
	var err error
	for i := 0; i < n; i++ {
		r := results[i]
		<-r.done
		err = emit(i, r.res, r.err)
		results[i] = nil
		<-sem
		if err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	return err
}

// batcher groups snapshots per instance into appends of about BatchSamples.
type batcher struct {
	w       *writer
	pending map[string][]*sample.Snapshot
	n       map[string]int
	order   []string
}

func newBatcher(w *writer) *batcher {
	return &batcher{w: w, pending: map[string][]*sample.Snapshot{}, n: map[string]int{}}
}

func (b *batcher) add(inst string, s *sample.Snapshot) error {
	if _, ok := b.pending[inst]; !ok {
		b.order = append(b.order, inst)
	}
	b.pending[inst] = append(b.pending[inst], s)
	b.n[inst] += len(s.Metrics)
	if b.n[inst] >= b.w.opt.BatchSamples {
		err := b.w.write(inst, b.pending[inst])
		b.pending[inst], b.n[inst] = b.pending[inst][:0:0], 0
		return err
	}
	return nil
}

func (b *batcher) flush() error {
	for _, inst := range b.order {
		if err := b.w.write(inst, b.pending[inst]); err != nil {
			return err
		}
		b.pending[inst], b.n[inst] = nil, 0
	}
	return b.w.flush()
}
