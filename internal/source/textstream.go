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

	"github.com/memdoctor/memdoctor/internal/exposition"
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
// by instance. Past a chunk of instances (indexChunkRuns) it keeps that in
// a temporary file (runFile), so its memory does not grow with their
// number; Close releases it.
type TextIndex struct {
	path    string
	defInst string
	mtime   time.Time
	size    int64
	opt     IngestOptions
	runs    []textRun // sorted by name, unless disk holds them
	// disk holds the runs, sorted by name, in its one segment, once the
	// scan has found more than a chunk of them (nil: runs holds them all,
	// as when no temporary file could be made).
	disk *runFile
	n    int // instances
	// chunkRuns and chunkBytes are how many runs, and bytes of their
	// names, the scan holds before writing them to disk.
	chunkRuns, chunkBytes int
	noDisk                bool // no temporary file could be made
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
// name of each instance up to 16,384 instances, and past that the same in
// a temporary file: its memory is then that of a chunk of instances.
func IndexText(path string, opt IngestOptions) (*TextIndex, error) {
	return indexText(path, opt, indexChunkRuns, indexChunkBytes)
}

// indexText is IndexText, writing the runs to disk by chunks of chunkRuns
// runs or chunkBytes bytes of names.
func indexText(path string, opt IngestOptions, chunkRuns, chunkBytes int) (*TextIndex, error) {
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
	x := &TextIndex{path: path, defInst: defInst, mtime: st.ModTime(), size: st.Size(), opt: opt,
		chunkRuns: chunkRuns, chunkBytes: chunkBytes}
	prog := newProgress(opt.Progress, st.Size())
	if err := x.scan(br, func() { prog.update(cr.n) }); err != nil {
		x.Close()
		return nil, err
	}
	if err := x.sort(); err != nil {
		x.Close()
		return nil, err
	}
	prog.finish()
	return x, nil
}

// sort sorts the runs by name (the last chunk, then all of them, when
// they are on disk), failing when an instance has two.
func (x *TextIndex) sort() error {
	if x.disk == nil {
		x.n = len(x.runs)
		slices.SortStableFunc(x.runs, func(a, b textRun) int { return strings.Compare(a.name, b.name) })
		return checkRepeats(x.runs)
	}
	if len(x.runs) > 0 {
		if err := x.disk.addChunk(x.runs); err != nil {
			return err
		}
	}
	x.runs = nil
	if err := x.disk.finish(); err != nil {
		return err
	}
	x.n = x.disk.segs[0].n
	return nil
}

// toDisk writes the runs held to disk, when a temporary file can be made,
// and says whether it did.
func (x *TextIndex) toDisk() (bool, error) {
	if x.noDisk {
		return false, nil
	}
	if x.disk == nil {
		rf, err := newRunFile()
		if err != nil {
			// Held in memory, as they were before the file was a chunk.
			x.noDisk = true
			return false, nil
		}
		x.disk = rf
	}
	if err := x.disk.addChunk(x.runs); err != nil {
		return false, err
	}
	clear(x.runs)
	x.runs = x.runs[:0]
	return true, nil
}

// Close releases the temporary file the index is kept in, if any.
func (x *TextIndex) Close() {
	if x.disk != nil {
		x.disk.close()
		x.disk = nil
	}
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
		seen             = map[string]int{} // instance → the line its run starts at, of the runs held
		// first is seen of the first chunk written to disk, kept: the
		// snapshots of a fleet saved one after the other repeat the first
		// instances, found as the second begins rather than once the whole
		// file has been indexed.
		first map[string]int
		names int // bytes of the names of the runs held
	)
	for sc.Scan() {
		start := off
		off += int64(adv)
		line++
		if unterminated {
			return fmt.Errorf("line %d: the file ends in the middle of a line: %w", line, ErrNoStream)
		}
		b := exposition.TrimBlanks(sc.Bytes())
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
		end, err := exposition.SeriesEnd(b)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, ErrNoStream)
		}
		raw := b[:end]
		_, rest := exposition.NextToken(b[end:])
		tsTok, _ := exposition.NextToken(rest)
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
			at, ok := seen[string(inst)]
			if !ok && first != nil {
				at, ok = first[string(inst)]
			}
			if ok {
				// Found as it happens: the runs of a file that interleaves
				// its instances line by line would be one a line.
				return fmt.Errorf("instance %q has lines at lines %d and %d, with other instances' between: %w", inst, at, line, ErrNoStream)
			}
			if len(x.runs) >= x.chunkRuns || names >= x.chunkBytes {
				// Those found after the runs written to disk are found
				// when they are sorted.
				if written, err := x.toDisk(); err != nil {
					return err
				} else if written {
					if first == nil {
						first, seen = seen, make(map[string]int, len(seen))
					} else {
						clear(seen)
					}
					names = 0
				}
			}
			x.runs = append(x.runs, textRun{name: string(inst), off: start, line: line})
			names += len(inst)
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
	_, labels, err := exposition.ParseSeries(raw)
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

// Len is the number of instances.
func (x *TextIndex) Len() int { return x.n }

// TextBatch is some instances of a TextIndex, to read with ReadBatch.
type TextBatch struct {
	// Names are the instances' names.
	Names []string
	runs  []textRun
}

func newTextBatch(runs []textRun) TextBatch {
	b := TextBatch{Names: make([]string, len(runs)), runs: runs}
	for i, r := range runs {
		b.Names[i] = r.name
	}
	return b
}

// Batches gives fn the instances sorted by name, n at a time (the last
// batch may hold fewer), until fn fails.
func (x *TextIndex) Batches(n int, fn func(TextBatch) error) error {
	n = max(n, 1)
	if x.disk == nil {
		for start := 0; start < len(x.runs); start += n {
			if err := fn(newTextBatch(x.runs[start:min(start+n, len(x.runs))])); err != nil {
				return err
			}
		}
		return nil
	}
	runs := make([]textRun, 0, n)
	err := x.disk.each(x.disk.segs[0], func(r textRun) error {
		runs = append(runs, r)
		if len(runs) < n {
			return nil
		}
		b := newTextBatch(runs)
		runs = make([]textRun, 0, n)
		return fn(b)
	})
	if err == nil && len(runs) > 0 {
		err = fn(newTextBatch(runs))
	}
	return err
}

// Find returns the batch of the named instances, in the order given, or
// an error naming one the file does not have.
func (x *TextIndex) Find(names []string) (TextBatch, error) {
	runs := make([]textRun, len(names))
	found := make([]bool, len(names))
	if x.disk == nil {
		for i, name := range names {
			var j int
			j, found[i] = slices.BinarySearchFunc(x.runs, name, func(r textRun, n string) int { return strings.Compare(r.name, n) })
			if found[i] {
				runs[i] = x.runs[j]
			}
		}
	} else {
		at := make(map[string]int, len(names))
		for i, name := range names {
			if _, ok := at[name]; !ok {
				at[name] = i
			}
		}
		err := x.disk.each(x.disk.segs[0], func(r textRun) error {
			if i, ok := at[r.name]; ok {
				runs[i], found[i] = r, true
			}
			return nil
		})
		if err != nil {
			return TextBatch{}, err
		}
		for i, name := range names {
			if j := at[name]; j != i && found[j] {
				runs[i], found[i] = runs[j], true
			}
		}
	}
	for i, name := range names {
		if !found[i] {
			return TextBatch{}, fmt.Errorf("instance %q is not in %s", name, x.path)
		}
	}
	return TextBatch{Names: slices.Clone(names), runs: runs}, nil
}

// ReadBatch reads the lines of the instances of b into a
// store.Mem of at most budget bytes, as ReadMem reads the whole file. When
// reading them says something about the file (a note, an error), or the
// Mem does not hold exactly those instances, it fails with an error
// wrapping ErrNoStream: the whole file must be read to say it as reading
// it whole does. Past the budget the error wraps store.ErrMemFull.
func (x *TextIndex) ReadBatch(b TextBatch, budget int64) (*store.Mem, error) {
	instances := b.Names
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
	for _, r := range b.runs {
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
