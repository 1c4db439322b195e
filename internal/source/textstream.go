package source

// A text file whose lines are grouped by instance (each instance's samples
// on consecutive lines, as a fleet-wide instant query saved as text is) is
// read a batch of instances at a time: IndexText scans it once, keeping of
// each instance only its name and where its lines are, and ReadBatch reads
// the lines of a few instances into a store.Mem. What one instance holds
// is what reading the whole file gives it (the same lines, parsed by the
// same parser in the same order); memory is the batch's, not the file's.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/safeio"
	"github.com/memdoctor/memdoctor/internal/store"
)

// ErrNoStream is wrapped when a file cannot be read a batch of instances
// at a time with the same result as reading it whole: it is compressed,
// its instances' lines are interleaved, or reading it would say something
// about the whole file (a note: a repeated or malformed sample, a missing
// timestamp; an error). The caller then reads the whole file (ReadMem).
var ErrNoStream = errors.New("not readable a batch of instances at a time")

// TextIndex says where each instance's lines are in a text file grouped
// by instance.
type TextIndex struct {
	path    string
	defInst string
	mtime   time.Time
	size    int64
	opt     IngestOptions
	runs    []textRun // sorted by name
}

// textRun is one instance's lines: bytes [off, end) of the file, starting
// at line number line.
type textRun struct {
	name     string
	off, end int64
	line     int
}

// IndexText scans the text file at path (KindOpenMetrics) and indexes its
// instances, or fails with an error wrapping ErrNoStream when it is not
// grouped by instance (see ErrNoStream). It holds about 60 bytes and the
// name of each instance.
func IndexText(path string, opt IngestOptions) (*TextIndex, error) {
	opt = opt.withDefaults()
	f, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	cr := &countingReader{r: f}
	br := bufio.NewReaderSize(cr, 256<<10)
	if head, _ := br.Peek(3); len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		return nil, fmt.Errorf("%s is compressed: %w", path, ErrNoStream)
	} else if bytes.HasPrefix(head, []byte("\xef\xbb\xbf")) {
		return nil, fmt.Errorf("%s starts with a byte order mark: %w", path, ErrNoStream)
	}
	defInst := opt.Instance
	if defInst == "" {
		defInst = baseName(path, textExts...)
	}
	x := &TextIndex{path: path, defInst: defInst, mtime: st.ModTime(), size: st.Size(), opt: opt}
	prog := newProgress(opt.Progress, st.Size())
	if err := x.scan(br, func() { prog.update(cr.n) }); err != nil {
		return nil, err
	}
	slices.SortStableFunc(x.runs, func(a, b textRun) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(x.runs); i++ {
		if x.runs[i].name == x.runs[i-1].name {
			return nil, fmt.Errorf("instance %q has lines at lines %d and %d, with other instances' between: %w",
				x.runs[i].name, x.runs[i-1].line, x.runs[i].line, ErrNoStream)
		}
	}
	prog.finish()
	return x, nil
}

// scan reads every line of r and notes where each instance's run of lines
// starts and ends. A line the parser would fail on or note ends the scan
// with ErrNoStream when the scan sees it; the rest are found by ReadBatch.
func (x *TextIndex) scan(r io.Reader, tick func()) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	var adv int
	unterminated := false
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			adv = i + 1
			return i + 1, dropCR(data[:i]), nil
		}
		if atEOF && len(data) > 0 {
			unterminated = true
			adv = len(data)
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	var (
		off, lastT       int64
		line             int
		cur              *textRun
		sawEOF, lastEOF  bool
		prevRaw, prevIns []byte             // the series of the previous sample line and its instance
		seen             = map[string]int{} // instance → the line its run starts at
	)
	for sc.Scan() {
		start := off
		off += int64(adv)
		line++
		if unterminated {
			return fmt.Errorf("line %d: the file ends in the middle of a line: %w", line, ErrNoStream)
		}
		b := trimBlanks(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if b[0] == '#' {
			if string(b) == "# EOF" {
				sawEOF, lastEOF = true, true
			}
			continue
		}
		lastEOF = false
		end, err := seriesEnd(b)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, ErrNoStream)
		}
		raw := b[:end]
		_, rest := nextToken(b[end:])
		tsTok, _ := nextToken(rest)
		if len(tsTok) == 0 || tsTok[0] == '#' {
			return fmt.Errorf("line %d: no timestamp: %w", line, ErrNoStream)
		}
		t, err := parseTimestamp(tsTok)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, ErrNoStream)
		}
		inst := prevIns
		if !bytes.Equal(raw, prevRaw) {
			name, err := x.instanceOf(raw)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, ErrNoStream)
			}
			inst = name
			prevRaw = append(prevRaw[:0], raw...)
			prevIns = inst
		}
		if cur == nil || !bytes.Equal(inst, []byte(cur.name)) {
			if at, ok := seen[string(inst)]; ok {
				// Found as it happens: the runs of a file that interleaves
				// its instances line by line would be one a line.
				return fmt.Errorf("instance %q has lines at lines %d and %d, with other instances' between: %w", inst, at, line, ErrNoStream)
			}
			x.runs = append(x.runs, textRun{name: string(inst), off: start, line: line})
			cur = &x.runs[len(x.runs)-1]
			seen[cur.name] = line
			lastT = t
		}
		if t < lastT {
			// Not in time order: how much the whole file's parser holds
			// (and whether it fails) depends on the other instances.
			return fmt.Errorf("line %d: not in time order: %w", line, ErrNoStream)
		}
		lastT = t
		cur.end = off
		if tick != nil && line&4095 == 0 {
			tick()
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w: %w", line+1, err, ErrNoStream)
	}
	if sawEOF && !lastEOF {
		return fmt.Errorf("no \"# EOF\" after the last sample: %w", ErrNoStream)
	}
	return nil
}

// instanceOf returns the instance a series belongs to, as the parser names
// it (newSeries).
func (x *TextIndex) instanceOf(raw []byte) ([]byte, error) {
	_, labels, err := parseSeries(raw)
	if err != nil {
		return nil, err
	}
	for _, l := range labels {
		if l.Name == "instance" {
			return []byte(l.Value), nil
		}
	}
	return []byte(x.defInst), nil
}

// Instances lists the instances, sorted.
func (x *TextIndex) Instances() []string {
	out := make([]string, len(x.runs))
	for i, r := range x.runs {
		out[i] = r.name
	}
	return out
}

// ReadBatch reads the lines of the given instances (each indexed) into a
// store.Mem of at most budget bytes, as ReadMem reads the whole file. When
// reading them says something about the file (a note, an error), or the
// Mem does not hold exactly those instances, it fails with an error
// wrapping ErrNoStream: the whole file must be read to say it as reading
// it whole does. Past the budget the error wraps store.ErrMemFull.
func (x *TextIndex) ReadBatch(instances []string, budget int64) (*store.Mem, error) {
	f, err := safeio.Open(x.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Size() != x.size || !st.ModTime().Equal(x.mtime) {
		return nil, fmt.Errorf("%s changed while it was read: %w", x.path, ErrNoStream)
	}
	var ra io.ReaderAt = f
	m := store.NewMem(budget)
	opt := x.opt
	opt.BatchSamples = 8192
	w := newWriter(m.AppendBatch, opt)
	p := newTextParser(x.path, x.defInst, opt, x.mtime, w)
	p.fragments = true
	// The runs in the order asked, those that follow each other in the file
	// read as one.
	var parts []io.Reader
	var last *io.SectionReader
	var lastEnd int64 = -1
	for _, name := range instances {
		i, found := slices.BinarySearchFunc(x.runs, name, func(r textRun, n string) int { return strings.Compare(r.name, n) })
		if !found {
			return nil, fmt.Errorf("instance %q is not in %s", name, x.path)
		}
		r := x.runs[i]
		if last != nil && r.off == lastEnd {
			_, off, n := last.Outer()
			last = io.NewSectionReader(ra, off, n+r.end-r.off)
			parts[len(parts)-1] = last
		} else {
			last = io.NewSectionReader(ra, r.off, r.end-r.off)
			parts = append(parts, last)
		}
		lastEnd = r.end
	}
	// A line buffer for the batch's bytes, not the 1 MiB a whole file's
	// parse starts with: made for each batch of 256 instances of one
	// sample, that was nine tenths of the bytes diagnosing them allocated.
	var total int64
	for _, r := range parts {
		total += r.(*io.SectionReader).Size()
	}
	p.bufSize = int(min(total+1, 1<<20))
	// Line numbers are not the file's: any message about a line makes the
	// caller read the whole file, which says it with the right one.
	if err := p.parse(io.MultiReader(parts...), nil); err != nil {
		return nil, errors.Join(err, ErrNoStream)
	}
	if err := p.finish(); err != nil {
		return nil, errors.Join(err, ErrNoStream)
	}
	if err := w.flush(); err != nil {
		if errors.Is(err, store.ErrMemFull) {
			return nil, err
		}
		return nil, errors.Join(err, ErrNoStream)
	}
	if len(w.notes.list()) > 0 || w.skipped > 0 {
		return nil, fmt.Errorf("the lines of %d instances have something to note: %w", len(instances), ErrNoStream)
	}
	m.Seal()
	got, _ := m.Instances()
	if !slices.Equal(got, instances) {
		return nil, fmt.Errorf("%d instances read of %d: %w", len(got), len(instances), ErrNoStream)
	}
	return m, nil
}
