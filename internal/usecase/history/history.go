package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/fleet"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/outfile"
	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/source"
	"github.com/memdoctor/memdoctor/internal/store"
)

// Progress is told how much of a long read is done (a progress bar's
// update). The two are aliases, so that the other use cases' own (live's
// Bars) are the same types.
type Progress = func(done, total int64)

// Bars start the display of a read's progress (label says what is read)
// and return its update and what ends it.
type Bars = func(label string) (update Progress, done func())

// Source is history opened for reading: a recording, a directory of saved
// files or captures, or an OpenMetrics file, as a store.
type Source struct {
	// Path is what was opened (the --from argument).
	Path string
	// Store is the store read (nil when OpenDiagnosis read a text file
	// into memory).
	Store *store.Store
	// read is what a diagnosis reads: Store, or the file in memory (mem).
	read reader
	mem  *store.Mem
	// idx indexes a text file grouped by instance, read a batch of
	// instances at a time (read and mem are the batch's); whole opens
	// the file read whole instead, should a batch say it must be.
	idx   *source.TextIndex
	whole func() (*Source, error)
	// Instances are the instances to read (of a text file indexed, nil
	// unless one was asked for: idx lists them); Notes say what reading
	// the source left out.
	Instances []string
	Notes     []sample.Note
	cleanup   func()
}

// Open opens path as a store and lists its instances (only instance,
// when given: it must be there).
func Open(path, instance string, lenient bool, progress Progress) (*Source, error) {
	if path == "" {
		return nil, errors.New("no source given")
	}
	st, cleanup, ist, err := source.OpenStore(path, source.IngestOptions{Lenient: lenient, Progress: progress})
	if err != nil {
		return nil, err
	}
	s := &Source{Path: path, Store: st, read: st, Notes: ist.Notes, cleanup: cleanup}
	if s.Instances, err = st.Instances(); err != nil {
		s.Close()
		return nil, err
	}
	return s.pick(instance)
}

// memBudget is how many bytes of samples and series OpenDiagnosis holds
// in memory (about 16 a sample, 100 a series) before it reads the file
// into a temporary store instead: 100,000 instances of one sample take
// about 20 MB. A variable for the tests.
var memBudget int64 = 192 << 20

// OpenDiagnosis opens path for Diagnose: a text file (OpenMetrics,
// Prometheus exposition) whose lines are grouped by instance is indexed
// and read by Diagnose a batch of instances at a time; another is read
// once into memory when it fits in memBudget, else, like any other
// source, opened as Open does. A text file opened so has no Store: only
// Diagnose reads it.
func OpenDiagnosis(path, instance string, lenient bool, progress Progress) (*Source, error) {
	if path == "" {
		return nil, errors.New("no source given")
	}
	if kind, err := source.Detect(path); err != nil || kind != source.KindOpenMetrics {
		return Open(path, instance, lenient, progress)
	}
	whole := func() (*Source, error) { return openWhole(path, instance, lenient, progress) }
	idx, err := source.IndexText(path, source.IngestOptions{Lenient: lenient, Progress: progress})
	if err != nil {
		// Interleaved, compressed or with something to note: read whole,
		// which also says what is wrong with it.
		return whole()
	}
	s := &Source{Path: path, idx: idx, whole: whole, cleanup: idx.Close}
	return s.pick(instance)
}

// openWhole reads a text file whole into memory when it fits in memBudget,
// else into a temporary store (Open).
func openWhole(path, instance string, lenient bool, progress Progress) (*Source, error) {
	mem, ist, err := source.ReadMem(path, source.IngestOptions{Lenient: lenient, Progress: progress}, memBudget)
	if errors.Is(err, store.ErrMemFull) {
		return Open(path, instance, lenient, progress)
	}
	if err != nil {
		return nil, err
	}
	s := &Source{Path: path, read: mem, mem: mem, Notes: ist.Notes}
	s.Instances, _ = mem.Instances()
	return s.pick(instance)
}

// pick keeps only instance of s's instances, when given (it must be
// there), and fails when s holds none.
func (s *Source) pick(instance string) (*Source, error) {
	if instance != "" {
		found := false
		if s.idx != nil {
			_, err := s.idx.Find([]string{instance})
			found = err == nil
		} else {
			for _, i := range s.Instances {
				found = found || i == instance
			}
		}
		if !found {
			all := s.Instances
			if s.idx != nil {
				_ = s.idx.Batches(diagnoseBatch, func(b source.TextBatch) error {
					all = append(all, b.Names...)
					return nil
				})
			}
			s.Close()
			return nil, fmt.Errorf("--instance %q: not in %s (it has: %s)", instance, s.Path, strings.Join(all, ", "))
		}
		s.Instances = []string{instance}
	}
	if s.numInstances() == 0 {
		s.Close()
		return nil, fmt.Errorf("%s holds no samples", s.Path)
	}
	return s, nil
}

// numInstances is the number of instances to read.
func (s *Source) numInstances() int {
	if s.idx != nil && s.Instances == nil {
		return s.idx.Len()
	}
	return len(s.Instances)
}

// reader is what a diagnosis reads of a source: a Store, or a Mem holding
// a text file read once (the same series, steps and latest values).
type reader interface {
	TimeRange(instance string) (from, to time.Time, err error)
	Select(q store.Query) ([]*sample.Series, error)
	SelectEach(q store.Query, fn func(*sample.Series) error) error
	Latest(instance string, t time.Time, maxAge time.Duration) (*sample.Snapshot, error)
}

// Close releases the store (and the temporary one ingesting made).
func (s *Source) Close() {
	if s.cleanup != nil {
		s.cleanup()
		s.cleanup = nil
	}
}

// InstanceResult is one instance's diagnosis.
type InstanceResult struct {
	Instance string    `json:"instance"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// StepSeconds is the resolution rules saw (0: raw samples).
	StepSeconds float64 `json:"step_seconds"`
	Series      int     `json:"series"`
	// Findings is how many findings the instance has.
	Findings int `json:"-"`
	// Report is the instance's report (not part of the JSON summary). A
	// merged Diagnosis keeps it only when it holds a single instance.
	Report *model.Report `json:"-"`
	// host: the instance has some series a rule reads (else it may be a
	// kubelet or kube-state-metrics, whose series no rule reads as they
	// are: see diagnoseKubelet).
	host bool
}

// Step is the resolution rules saw.
func (r InstanceResult) Step() time.Duration {
	return time.Duration(r.StepSeconds * float64(time.Second))
}

// Diagnosis is what diagnose prints as JSON: the check shape (host,
// accounting, zones, ... of the single instance's last state) plus every
// instance's findings and notes, and what data each instance had.
type Diagnosis struct {
	*model.Report
	Instances []InstanceResult `json:"instances"`
	Source    string           `json:"source"`
	// Kubelet says how the hosts of a source without node_exporter were
	// inferred from its containers' series.
	Kubelet *fleet.Kubelet `json:"kubelet,omitempty"`
	// spill holds the instances' summaries instead of Instances, past
	// spillOver instances.
	spill *spill
}

// NumInstances is the number of instances diagnosed.
func (d *Diagnosis) NumInstances() int {
	if d.spill != nil {
		return d.spill.n
	}
	return len(d.Instances)
}

// EachInstance gives fn each instance's summary, in order: from Instances,
// or read back from the temporary file they were kept in (their Report is
// then nil).
func (d *Diagnosis) EachInstance(fn func(InstanceResult) error) error {
	if d.spill != nil {
		return d.spill.each(fn)
	}
	for _, r := range d.Instances {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the temporary file the instances' summaries are kept in,
// if any.
func (d *Diagnosis) Close() {
	if d.spill != nil {
		d.spill.close()
		d.spill = nil
	}
}

// Diagnose diagnoses every instance of s over since … until and merges
// them as it goes: of each instance only its findings, its notes and its
// summary are kept (and the first one's report, for the check shape), so
// memory grows with what is found, not with the number of instances read.
// A source read into memory is judged a batch of instances at a time, on
// every CPU, and merged in order.
func Diagnose(s *Source, since, until string) (*Diagnosis, error) {
	if s.idx != nil {
		d, err := s.diagnoseBatches(since, until)
		if d != nil || (err != nil && !errors.Is(err, source.ErrNoStream) && !errors.Is(err, store.ErrMemFull)) {
			return d, err
		}
		// Something only the whole file says (a note, an error, the
		// containers of a kubelet's series): read it whole.
		w, err := s.whole()
		if err != nil {
			return nil, err
		}
		defer w.Close()
		return Diagnose(w, since, until)
	}
	m := newMerger(s.Path, len(s.Instances))
	hosts := false
	batch := 1
	if s.mem != nil {
		batch = diagnoseBatch
	}
	results := make([]InstanceResult, batch)
	errs := make([]error, batch)
	for start := 0; start < len(s.Instances); start += batch {
		insts := s.Instances[start:min(start+batch, len(s.Instances))]
		s.diagnoseEach(insts, since, until, results, errs)
		for i, inst := range insts {
			if errs[i] != nil {
				m.close()
				return nil, fmt.Errorf("instance %s: %w", inst, errs[i])
			}
			r := results[i]
			results[i] = InstanceResult{}
			hosts = hosts || r.host
			if r.host && s.mem != nil {
				// Judged, and not needed by diagnoseKubelet (which runs
				// only when no instance has a series the rules read).
				s.mem.Forget(inst)
			}
			m.add(r)
		}
	}
	if !hosts {
		d, err := s.diagnoseKubelet(since, until)
		if err != nil || d != nil {
			m.close()
			return d, err
		}
	}
	return m.done(), nil
}

// diagnoseBatches is Diagnose of a text file grouped by instance: each
// batch of instances is read (into a Mem of its own), judged and merged,
// then dropped, so memory does not grow with the number of instances past
// what is kept of each. It returns nil and no error when no instance has
// a series the rules read (diagnoseKubelet reads every instance at once),
// and an error wrapping source.ErrNoStream or store.ErrMemFull when the
// file must be read whole.
func (s *Source) diagnoseBatches(since, until string) (*Diagnosis, error) {
	m := newMerger(s.Path, s.numInstances())
	hosts := false
	results := make([]InstanceResult, diagnoseBatch)
	errs := make([]error, diagnoseBatch)
	judge := func(b source.TextBatch) error {
		mem, err := s.idx.ReadBatch(b, memBudget)
		if err != nil {
			return err
		}
		insts := b.Names
		s.read, s.mem = mem, mem
		s.diagnoseEach(insts, since, until, results, errs)
		s.read, s.mem = nil, nil
		for i, inst := range insts {
			if errs[i] != nil {
				return fmt.Errorf("instance %s: %w", inst, errs[i])
			}
			hosts = hosts || results[i].host
			m.add(results[i])
			results[i] = InstanceResult{}
		}
		return nil
	}
	var err error
	if s.Instances != nil {
		var b source.TextBatch
		if b, err = s.idx.Find(s.Instances); err == nil {
			err = judge(b)
		}
	} else {
		err = s.idx.Batches(diagnoseBatch, judge)
	}
	if err != nil {
		m.close()
		return nil, err
	}
	if !hosts {
		m.close()
		return nil, nil
	}
	return m.done(), nil
}

// diagnoseBatch is how many instances read into memory are judged before
// their results are merged: the reports held at once.
const diagnoseBatch = 256

// diagnoseEach diagnoses insts into results and errs (as long as insts):
// one at a time, or of a source in memory on up to GOMAXPROCS goroutines.
func (s *Source) diagnoseEach(insts []string, since, until string, results []InstanceResult, errs []error) {
	workers := 1
	if s.mem != nil {
		workers = min(runtime.GOMAXPROCS(0), len(insts))
	}
	if workers <= 1 {
		for i, inst := range insts {
			results[i], errs[i] = s.DiagnoseInstance(inst, since, until)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(insts) {
					return
				}
				results[i], errs[i] = s.DiagnoseInstance(insts[i], since, until)
			}
		})
	}
	wg.Wait()
}

// diagnoseKubelet diagnoses a source none of whose instances has a series
// the rules read (no node_exporter, no memdoctor record) that holds a
// cluster's cadvisor and kube-state-metrics series: per host
// inferred from them, its containers judged as cgroups (internal/fleet).
// It returns nil when the source holds no container series.
func (s *Source) diagnoseKubelet(since, until string) (*Diagnosis, error) {
	var first, last time.Time
	for _, inst := range s.Instances {
		f, l, err := s.read.TimeRange(inst)
		if err != nil {
			return nil, err
		}
		if first.IsZero() || f.Before(first) {
			first = f
		}
		if l.After(last) {
			last = l
		}
	}
	win, err := StoreWindow(first, last, since, until)
	if err != nil {
		return nil, err
	}
	var results []InstanceResult
	rd := fleet.Reader{Instances: s.Instances, From: win.From, To: win.To, Step: win.Step,
		Each: func(inst string, names []string, fn func(*sample.Series) error) error {
			return s.read.SelectEach(store.Query{Instance: inst, Names: names, From: win.From, To: win.To, Step: win.Step,
				Keep: map[string]sample.Aggregates{}}, fn)
		}}
	k, err := fleet.KubeletWindows(rd, func(host string, w *sample.Window) error {
		rep := diagnose.Run(diagnose.Data{Window: w, Source: "store", Notes: s.Notes})
		rep.FitSource(s.Path, "")
		fleet.NoNodeExporter(rep)
		results = append(results, InstanceResult{Instance: host, From: win.From, To: win.To, StepSeconds: win.Step.Seconds(),
			Series: len(w.Series), Findings: len(rep.Findings), Report: rep})
		return nil
	})
	if err != nil || k == nil {
		return nil, err
	}
	d := Merge(results, s.Path)
	d.Kubelet = k
	d.Notes = append([]sample.Note{{Source: "containers", Message: k.Note}}, d.Notes...)
	return d, nil
}

// DiagnoseInstance diagnoses one instance over its window. The findings'
// follow-up commands name the source and, when it holds several
// instances, the instance: to paste as they are.
func (s *Source) DiagnoseInstance(inst, since, until string) (InstanceResult, error) {
	first, last, err := s.read.TimeRange(inst)
	if err != nil {
		return InstanceResult{}, err
	}
	win, err := StoreWindow(first, last, since, until)
	if err != nil {
		return InstanceResult{}, err
	}
	w, n, err := s.planWindow(inst, win, rulesPlan())
	if err != nil {
		return InstanceResult{}, err
	}
	latest, err := s.read.Latest(inst, win.To, 3*max(win.Step, time.Minute))
	if err != nil {
		return InstanceResult{}, err
	}
	if s.Store != nil {
		s.Store.Forget(inst) // read: of many instances, only the findings are kept
	}
	rep := diagnose.Run(diagnose.Data{Latest: latest, Window: w, Source: "store", Notes: s.Notes})
	if s.numInstances() > 1 {
		rep.FitSource(s.Path, inst)
	} else {
		rep.FitSource(s.Path, "")
	}
	return InstanceResult{Instance: inst, From: win.From, To: win.To, StepSeconds: win.Step.Seconds(), Series: n,
		Findings: len(rep.Findings), Report: rep, host: n > 0}, nil
}

// diagnosisWindow reads what rules read of inst over win: only the series
// and the step aggregates they declare (of 30 days at a 648 s step, Points
// are 16 of the 40 bytes a step takes). With thin, the series every rule
// reads only at the ends of segments (hundreds of slab caches) are read
// after the rest, one at a time, and kept at those ends.
func (s *Source) diagnosisWindow(inst string, win Window, rules []diagnose.Rule, thin bool) (*sample.Window, int, error) {
	return s.planWindow(inst, win, newReadPlan(rules, thin))
}

// readPlan is what a diagnosis reads of each instance: the series read in
// full, those read only at the ends of segments, and the step aggregates.
type readPlan struct {
	rest, ends []string
	keep       map[string]sample.Aggregates
}

func newReadPlan(rules []diagnose.Rule, thin bool) readPlan {
	var ends []string
	if thin {
		ends = diagnose.WindowEndsOnly(rules)
	}
	var rest []string
	for _, n := range diagnose.WindowSeries(rules) {
		if !slices.Contains(ends, n) {
			rest = append(rest, n)
		}
	}
	return readPlan{rest: rest, ends: ends, keep: diagnose.WindowAggregates(rules)}
}

// rulesPlan is the plan of every rule, made once: made for each instance it
// took an eighth of the time of diagnosing 10,000 instances of one sample.
var rulesPlan = sync.OnceValue(func() readPlan { return newReadPlan(diagnose.Rules(), true) })

// planWindow reads what p says of inst over win (see diagnosisWindow).
func (s *Source) planWindow(inst string, win Window, p readPlan) (*sample.Window, int, error) {
	rest, ends := p.rest, p.ends
	q := store.Query{Instance: inst, Names: rest, Keep: p.keep}
	w, n := &sample.Window{Instance: inst, From: win.From, To: win.To, Step: win.Step}, 0
	var err error
	if len(rest) > 0 { // no names would read every series
		if w, n, err = s.window(q, win); err != nil || len(ends) == 0 {
			return w, n, err
		}
	}
	cut := model.ThinToEnds(w)
	q.Names, q.From, q.To, q.Step = ends, win.From, win.To, win.Step
	err = s.read.SelectEach(q, func(x *sample.Series) error {
		w.Add(cut(x))
		n++
		return nil
	})
	return w, n, err
}

// window reads the series q selects (of q.Instance) over win into a
// sample.Window, with how many series it read.
func (s *Source) window(q store.Query, win Window) (*sample.Window, int, error) {
	q.From, q.To, q.Step = win.From, win.To, win.Step
	series, err := s.read.Select(q)
	if err != nil {
		return nil, 0, err
	}
	w := &sample.Window{Instance: q.Instance, From: win.From, To: win.To, Step: win.Step}
	for _, x := range series {
		w.Add(x)
	}
	return w, len(series), nil
}

// Merge combines instances: the check shape of the only (or first)
// instance, with every instance's findings and notes.
func Merge(rs []InstanceResult, src string) *Diagnosis {
	m := newMerger(src, len(rs))
	for _, r := range rs {
		m.add(r)
	}
	return m.done()
}

// merger combines instance results one at a time into a Diagnosis, keeping
// of each only its findings, its notes (their texts shared between the
// instances that have the same) and its summary. Past groupNotesOver
// instances, a note several instances have is kept once, with how many
// have it and the first few names.
type merger struct {
	src      string
	several  bool
	first    *model.Report
	results  []InstanceResult
	findings []model.Finding
	notes    []sample.Note
	coverage model.CoverageMerger
	texts    map[string]string
	// spill keeps the summaries instead of results, past spillOver
	// instances.
	spill *spill

	group   bool
	groups  map[sample.Note]*noteGroup
	order   []*noteGroup
	dropped int // notes past maxTexts groups, counted only
}

// noteGroup is one note and the instances that have it.
type noteGroup struct {
	note  sample.Note
	n     int
	first []string
}

// groupNotesOver is the number of instances past which the notes that
// instances share are told once: 100,000 instances of one sample had 18
// notes each, 1.8 million notes, 385 MB of text and about 200 MB held.
const groupNotesOver = 100

// groupNames is how many instances a grouped note names.
const groupNames = 3

func newMerger(src string, instances int) *merger {
	m := &merger{src: src, several: instances > 1, texts: map[string]string{}}
	if instances > spillOver {
		// Else (no temporary file can be made) the summaries are kept in
		// memory, as for fewer instances.
		m.spill, _ = newSpill()
	}
	if m.spill == nil {
		m.results = make([]InstanceResult, 0, instances)
	}
	if instances > groupNotesOver {
		m.group, m.groups = true, map[sample.Note]*noteGroup{}
	}
	return m
}

// maxTexts bounds the distinct note texts shared: of a file whose notes
// all differ, the map would otherwise hold an entry for every note. It
// also bounds the groups of notes.
const maxTexts = 4096

// text returns s, or the equal string kept before: a note's message and
// fix are the same on thousands of instances.
func (m *merger) text(s string) string {
	if t, ok := m.texts[s]; ok {
		return t
	}
	if len(m.texts) < maxTexts {
		m.texts[s] = s
	}
	return s
}

func (m *merger) add(r InstanceResult) {
	if !m.several {
		m.results = append(m.results, r)
		return
	}
	if m.first == nil {
		m.first = r.Report
		if !m.group {
			// Instances of a fleet mostly have the notes the first has: room
			// for as many each, made once, spares the copies (and the two
			// arrays at once) of a slice doubling to millions of notes.
			m.notes = make([]sample.Note, 0, len(r.Report.Notes)*cap(m.results))
		}
	}
	m.findings = append(m.findings, r.Report.Findings...)
	ref := model.InstanceRef(r.Instance) // the name in its notes' prefixes
	for _, n := range r.Report.Notes {
		if m.group {
			m.addGrouped(ref, n)
			continue
		}
		n.Source = ref + ": " + n.Source
		n.Message, n.Hides, n.Fix = m.text(n.Message), m.text(n.Hides), m.text(n.Fix)
		m.notes = append(m.notes, n)
	}
	m.coverage.Add(r.Instance, r.Report.Coverage)
	r.Findings = len(r.Report.Findings)
	r.Report = nil
	if m.spill != nil {
		m.spill.add(r)
		return
	}
	m.results = append(m.results, r)
}

// close releases the merger's temporary file, when it is not done.
func (m *merger) close() {
	if m.spill != nil {
		m.spill.close()
		m.spill = nil
	}
}

// addGrouped counts note n against inst (the instance as its notes name
// it, model.InstanceRef): a note seen first opens a group
// while there are fewer than maxTexts, later ones are only counted.
func (m *merger) addGrouped(inst string, n sample.Note) {
	g := m.groups[n]
	if g == nil {
		if len(m.groups) >= maxTexts {
			m.dropped++
			return
		}
		n.Source, n.Message, n.Hides, n.Fix = m.text(n.Source), m.text(n.Message), m.text(n.Hides), m.text(n.Fix)
		g = &noteGroup{note: n}
		m.groups[n] = g
		m.order = append(m.order, g)
	}
	g.n++
	if len(g.first) < groupNames {
		g.first = append(g.first, inst)
	}
}

// groupedNotes are the groups as notes, in the order first seen: the
// instance's name when one has it, else how many and the first few.
func (m *merger) groupedNotes() []sample.Note {
	out := make([]sample.Note, 0, len(m.order)+1)
	for _, g := range m.order {
		n := g.note
		switch {
		case g.n == 1:
			n.Source = g.first[0] + ": " + n.Source
		case g.n <= len(g.first):
			n.Source = fmt.Sprintf("%d instances (%s): %s", g.n, strings.Join(g.first, ", "), n.Source)
		default:
			n.Source = fmt.Sprintf("%d instances (%s and %d more): %s", g.n, strings.Join(g.first, ", "), g.n-len(g.first), n.Source)
		}
		out = append(out, n)
	}
	if m.dropped > 0 {
		out = append(out, sample.Note{Source: m.src,
			Message: fmt.Sprintf("%d more notes, each of its own kind, are not listed (the instances have more than %d different notes)", m.dropped, maxTexts),
			Fix:     "diagnose one instance with --instance NAME for all of its notes"})
	}
	return out
}

func (m *merger) done() *Diagnosis {
	if !m.several {
		return &Diagnosis{Report: m.results[0].Report, Instances: m.results, Source: m.src}
	}
	merged := *m.first
	merged.Findings, merged.Notes = m.findings, m.notes
	if m.group {
		merged.Notes = m.groupedNotes()
	}
	model.SortFindings(merged.Findings)
	merged.Coverage = m.coverage.Coverage()
	return &Diagnosis{Report: &merged, Instances: m.results, Source: m.src, spill: m.spill}
}

// LastTime is the end of the data of every instance of s.
func (s *Source) LastTime() (time.Time, error) {
	var last time.Time
	insts, err := s.Store.Instances()
	if err != nil {
		return last, err
	}
	for _, i := range insts {
		if _, t, err := s.Store.TimeRange(i); err == nil && t.After(last) {
			last = t
		}
	}
	return last, nil
}

// OpenAll opens path as a store with every instance it holds (none is an
// empty list, not an error): for export.
func OpenAll(path string, lenient bool, progress Progress) (*Source, error) {
	st, cleanup, ist, err := source.OpenStore(path, source.IngestOptions{Lenient: lenient, Progress: progress})
	if err != nil {
		return nil, err
	}
	return &Source{Path: path, Store: st, read: st, Notes: ist.Notes, cleanup: cleanup}, nil
}

// Export resolves since … until against the end of the data and writes
// the samples of instance (every instance when "") in that range as
// OpenMetrics or Parquet: to w when out is "-", else to the file out (a
// new or regular file is replaced atomically, so an interrupted export
// never leaves a truncated file under the final name; a FIFO or terminal
// is written through, a device never replaced).
func (s *Source) Export(out string, w io.Writer, format, instance, since, until string) error {
	q := store.Query{Instance: instance}
	if since != "" || until != "" {
		last, err := s.LastTime()
		if err != nil {
			return err
		}
		if q.From, q.To, err = ParseRange(since, until, last); err != nil {
			return err
		}
	}
	write := func(w io.Writer) error {
		if format == "parquet" {
			return s.Store.ExportParquet(w, q)
		}
		return s.Store.ExportOpenMetrics(w, q)
	}
	if out == "-" {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return outfile.Write(out, 0o644, write)
}
