package source

// Prometheus text exposition and OpenMetrics, with timestamps.
//
// The reader is a line parser of its own (the grammar of a series is
// package exposition's, shared with the runtimes' scrape): the text parser
// of prometheus/common (expfmt) builds whole metric families in memory,
// reads only integer millisecond timestamps (OpenMetrics has float
// seconds) and rejects a family that comes back (concatenated snapshots);
// prometheus/prometheus' model/textparse needs github.com/gogo/protobuf.
//
// Accepted, line by line (CRLF too):
//
//	# HELP / # TYPE / # UNIT / any comment    ignored (types need no checking:
//	                                           "unknown", "counter" with
//	                                           _total samples, ...)
//	# EOF                                      OpenMetrics end; more data may
//	                                           follow (concatenated dumps), but
//	                                           a file that has one must end
//	                                           with one (else: truncated)
//	name{l="v",...} value [timestamp] [# exemplar]
//	{"utf8.name",l="v"} value [timestamp]      quoted names (UTF-8)
//
// Label values unescape \\, \" and \n, and Go's other escapes (\t, \xHH,
// \uHHHH: promtool tsdb dump quotes with strconv.Quote). Empty label
// values mean "no label".
// The "instance" label names the instance and is removed from the labels;
// series without it belong to the default instance. A timestamp with a
// fraction or an exponent, or an integer below 1e11, is in seconds
// (OpenMetrics); a larger integer is in milliseconds (Prometheus text).
// Samples without a timestamp are stamped with the file's modification time,
// and a note says so. The last line must end with a newline: a file that
// does not was cut short. Samples of one series at one time appearing twice:
// the last wins, counted as skipped; a repeat is dropped as it is read, so
// repeats cost no memory.
//
// Malformed input fails, naming the file and line: a dump that parses only
// in part is more often cut short or mangled than merely untidy, and a
// diagnosis from part of the data should not look like one from all of it.
// IngestOptions.Lenient skips malformed lines instead (and accepts a
// missing final "# EOF"), counting them in a note.
//
// Memory: series are interned once; a sample costs 12 bytes while buffered.
// Input in time order per instance (concatenated snapshots) is written out as
// it goes whenever more than BufferSamples are held; input grouped by series
// is held (as compact samples, never as metric families) up to
// MaxHeldSamples, and the file fails past it; the distinct series are
// bounded by MaxSeries. A gzip file that expands more than 100-fold is
// refused as it is read (a gzip bomb), so no input costs more than these
// fixed budgets.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/exposition"
	"github.com/memdoctor/memdoctor/internal/safeio"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// maxLine bounds one line of text exposition.
const maxLine = 16 << 20

var textExts = []string{".gz", ".prom", ".om", ".openmetrics", ".txt", ".metrics"}

// hasTextExt reports whether a file name says it is a text exposition.
func hasTextExt(path string) bool {
	name := strings.TrimSuffix(filepath.Base(path), ".gz")
	for _, e := range textExts[1:] {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// bucket holds the samples of one instance at one time: 12 bytes a sample.
type bucket struct {
	sids []uint32
	vals []float64
}

type textInstance struct {
	name     string
	buckets  map[int64]*bucket
	has      bool
	maxT     int64
	monotone bool
	flushed  bool
	flushedT int64
}

type textParser struct {
	file    string
	defInst string
	opt     IngestOptions
	mtimeMs int64
	w       *writer // nil: parse only (Detect)
	// fragments: the input is some instances' lines cut from a file
	// (TextIndex.ReadBatch), whose end is not the file's.
	fragments bool
	// bufSize, when set, is the line buffer's first size (it grows to
	// the longest line): a batch's few lines need less than a file's 1 MiB.
	bufSize int

	raw    map[string]uint32 // series text as written -> sid
	canon  map[string]uint32 // instance + canonical series -> sid
	tmpl   []sample.Metric   // per sid: name and labels
	sinst  []uint32          // per sid: instance index
	insts  []*textInstance
	instIx map[string]uint32

	lastInst uint32
	lastT    int64
	lastB    *bucket

	buffered  int
	flushAt   int
	line      int
	noTS      int
	dups      int
	bad       int
	firstBad  error
	sawEOF    bool
	lastIsEOF bool
	cutShort  error // lenient: the missing final # EOF
	// nonFinite counts NaN and ±Inf samples, dropped; firstNonFinite
	// says where the first was.
	nonFinite      int
	firstNonFinite string

	gen []uint32 // per sid, for duplicate detection while building a snapshot
	pos []int32
	cur uint32

	// Per sid, where its latest sample is held: a sample repeating it (same
	// series, same time) replaces its value instead of being held again.
	// Valid while lastEpoch[sid] == epoch; moving or writing out held
	// samples starts a new epoch.
	lastAt    []int64
	lastPos   []int32
	lastEpoch []uint32
	epoch     uint32
}

func newTextParser(file, defInst string, opt IngestOptions, mtime time.Time, w *writer) *textParser {
	return &textParser{file: file, defInst: defInst, opt: opt, mtimeMs: mtime.UnixMilli(), w: w,
		raw: map[string]uint32{}, canon: map[string]uint32{}, instIx: map[string]uint32{},
		flushAt: min(opt.BufferSamples, opt.MaxHeldSamples), epoch: 1}
}

func readText(path string, opt IngestOptions, w *writer) error {
	f, err := safeio.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return err
	}
	cr := &countingReader{r: f}
	r, err := maybeGunzip(cr, path)
	if err != nil {
		return err
	}
	if _, plain := r.(*bufio.Reader); !plain {
		r = &ratioReader{r: r, wire: cr}
	}
	defInst := opt.Instance
	if defInst == "" {
		defInst = baseName(path, textExts...)
	}
	p := newTextParser(path, defInst, opt, st.ModTime(), w)
	prog := newProgress(opt.Progress, st.Size())
	if err := p.parse(r, func() { prog.update(cr.n) }); err != nil {
		return err
	}
	if err := p.finish(); err != nil {
		return err
	}
	prog.finish()
	return nil
}

// maybeGunzip returns a reader of the decompressed data when r starts with
// the gzip magic.
func maybeGunzip(r io.Reader, file string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	head, _ := br.Peek(2) // a short or empty file is simply not gzip
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &InputError{File: file, Err: fmt.Errorf("%w: gzip: %w", ErrMalformed, err)}
		}
		return zr, nil
	}
	return br, nil
}

// A gzip file decodes to at most maxGzipRatio times its size, beyond its
// first gzipSlack bytes: text exposition compresses 15 to 19 times (the
// golden recordings, gzip -9), while a gzip bomb (one line repeated, 2 MB
// expanding to 1 GiB) expands 500 times and more.
const (
	maxGzipRatio = 100
	gzipSlack    = 64 << 20
)

// ratioReader fails once the data decoded from a compressed file outgrows
// the compressed bytes read by more than maxGzipRatio.
type ratioReader struct {
	r    io.Reader
	wire *countingReader
	n    int64
}

func (z *ratioReader) Read(b []byte) (int, error) {
	n, err := z.r.Read(b)
	z.n += int64(n)
	if z.n > gzipSlack && z.n > maxGzipRatio*z.wire.n {
		return n, &capError{fmt.Errorf("%w: the gzip data expands more than %d-fold (%d MiB from %d KiB so far): a compressed recording never does, a gzip bomb does; "+
			"if the file really is one, decompress it first (a plain file is read whatever its size)", ErrMalformed, maxGzipRatio, z.n>>20, z.wire.n>>10)}
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// parse reads every line of r.
func (p *textParser) parse(r io.Reader, tick func()) error {
	sc := bufio.NewScanner(r)
	size := 1 << 20
	if p.bufSize > 0 {
		size = min(p.bufSize, size)
	}
	sc.Buffer(make([]byte, 0, size), maxLine)
	unterminated := false
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, dropCR(data[:i]), nil
		}
		if atEOF && len(data) > 0 {
			unterminated = true
			return len(data), dropCR(data), nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		p.line++
		b := sc.Bytes()
		if p.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
		}
		var ce *capError
		if unterminated && errors.As(sc.Err(), &ce) {
			break // the budget cut the line, not the file's end
		}
		if unterminated {
			err := fmt.Errorf("%w: the file ends in the middle of a line (cut short?)", ErrMalformed)
			if err := p.badLine(err); err != nil {
				return err
			}
			break
		}
		if err := p.parseLine(b); err != nil {
			if err := p.badLine(err); err != nil {
				return err
			}
		}
		if tick != nil && p.line&4095 == 0 {
			tick()
		}
	}
	if err := sc.Err(); err != nil {
		var ce *capError
		switch {
		case errors.As(err, &ce):
		case errors.Is(err, bufio.ErrTooLong):
			err = fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, maxLine)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader):
			err = fmt.Errorf("%w: compressed data cut short or damaged: %w", ErrMalformed, err)
		}
		return &InputError{File: p.file, Line: p.line + 1, Err: err}
	}
	if p.sawEOF && !p.lastIsEOF && !p.fragments {
		err := &InputError{File: p.file, Line: p.line,
			Err: fmt.Errorf("%w: OpenMetrics input does not end with \"# EOF\" after its last sample (cut short?)", ErrMalformed)}
		if !p.opt.Lenient {
			return err
		}
		p.cutShort = err
	}
	return nil
}

func dropCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// badLine fails, or in lenient mode counts the bad line.
func (p *textParser) badLine(err error) error {
	ie := &InputError{File: p.file, Line: p.line, Err: err}
	var ce *capError
	if !p.opt.Lenient || errors.As(err, &ce) {
		return ie
	}
	p.bad++
	if p.firstBad == nil {
		p.firstBad = ie
	}
	return nil
}

// parseLine handles one line (without its newline).
func (p *textParser) parseLine(line []byte) error {
	line = exposition.TrimBlanks(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '#' {
		if string(line) == "# EOF" {
			p.sawEOF, p.lastIsEOF = true, true
		}
		return nil
	}
	end, err := exposition.SeriesEnd(line)
	if err != nil {
		return err
	}
	raw := line[:end]
	rest := line[end:]
	if len(rest) == 0 || !exposition.IsBlank(rest[0]) {
		if len(rest) == 0 {
			return fmt.Errorf("%w: no value after the series", ErrMalformed)
		}
		return fmt.Errorf("%w: unexpected %q after the series name", ErrMalformed, rest[0])
	}
	valTok, rest := exposition.NextToken(rest)
	tsTok, rest := exposition.NextToken(rest)
	if len(tsTok) > 0 && tsTok[0] == '#' {
		tsTok, rest = nil, nil // exemplar right after the value
	}
	if len(rest) > 0 && rest[0] != '#' {
		return fmt.Errorf("%w: unexpected %q after the timestamp", ErrMalformed, rest)
	}
	v, err := strconv.ParseFloat(string(valTok), 64)
	if err != nil {
		return fmt.Errorf("%w: bad value %q", ErrMalformed, valTok)
	}
	t := p.mtimeMs
	if len(tsTok) > 0 {
		if t, err = parseTimestamp(tsTok); err != nil {
			return err
		}
	} else {
		p.noTS++
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		// Valid exposition (a stale marker, a ratio of 0/0), but no size
		// or counter memdoctor reads can be NaN or infinite: the sample is
		// dropped and counted, never judged or written to JSON.
		if p.nonFinite == 0 {
			name := string(raw)
			if len(name) > 200 {
				name = name[:200] + "…"
			}
			p.firstNonFinite = fmt.Sprintf("line %d, %s %s", p.line, name, valTok)
		}
		p.nonFinite++
		p.lastIsEOF = false
		return nil
	}
	sid, ok := p.raw[string(raw)]
	if !ok {
		if sid, err = p.newSeries(raw); err != nil {
			return err
		}
	}
	p.lastIsEOF = false
	return p.add(sid, t, v)
}

// parseTimestamp reads seconds (a fraction, an exponent, or an integer below
// 1e11) or milliseconds (a larger integer) into milliseconds.
func parseTimestamp(tok []byte) (int64, error) {
	s := string(tok)
	if !strings.ContainsAny(s, ".eE") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil {
			if n > -1e11 && n < 1e11 {
				return n * 1000, nil
			}
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return 0, fmt.Errorf("%w: bad timestamp %q", ErrMalformed, tok)
	}
	return int64(math.Round(f * 1000)), nil
}

// newSeries parses a series seen for the first time.
func (p *textParser) newSeries(raw []byte) (uint32, error) {
	name, labels, err := exposition.ParseSeries(raw)
	if err != nil {
		return 0, err
	}
	inst := p.defInst
	for i, l := range labels {
		if l.Name == "instance" {
			inst = l.Value
			labels = slices.Delete(labels, i, i+1)
			break
		}
	}
	if len(labels) == 0 {
		labels = nil
	}
	ix, ok := p.instIx[inst]
	if !ok {
		ix = uint32(len(p.insts))
		p.instIx[inst] = ix
		p.insts = append(p.insts, &textInstance{name: inst, buckets: map[int64]*bucket{}, monotone: true})
	}
	m := sample.Metric{Name: name, Labels: labels}
	key := inst + "\xff" + m.Key()
	sid, ok := p.canon[key]
	if !ok {
		if len(p.tmpl) >= p.opt.MaxSeries || len(p.tmpl) >= math.MaxUint32 {
			return 0, &capError{fmt.Errorf("more than %d distinct series (about %d MiB to hold): memdoctor reads at most that many from one file; "+
				"split the file by instance, or keep only the node_exporter and memdoctor series", p.opt.MaxSeries, p.opt.MaxSeries*seriesCost>>20)}
		}
		sid = uint32(len(p.tmpl))
		p.canon[key] = sid
		p.tmpl = append(p.tmpl, m)
		p.sinst = append(p.sinst, ix)
		p.lastAt = append(p.lastAt, 0)
		p.lastPos = append(p.lastPos, 0)
		p.lastEpoch = append(p.lastEpoch, 0)
	}
	p.raw[string(raw)] = sid
	return sid, nil
}

// add buffers one sample.
func (p *textParser) add(sid uint32, t int64, v float64) error {
	ix := p.sinst[sid]
	in := p.insts[ix]
	if in.flushed && t <= in.flushedT {
		return fmt.Errorf("sample of %s at %s is not newer than snapshots of %s already written "+
			"(the input is not in time order and exceeded the buffer: raise BufferSamples or sort the input)",
			p.tmpl[sid].Key(), time.UnixMilli(t).UTC().Format(time.RFC3339Nano), in.name)
	}
	if in.has && t < in.maxT {
		in.monotone = false
	}
	if !in.has || t > in.maxT {
		in.maxT, in.has = t, true
	}
	b := p.lastB
	if b == nil || p.lastInst != ix || p.lastT != t {
		b = in.buckets[t]
		if b == nil {
			b = &bucket{}
			in.buckets[t] = b
		}
		p.lastB, p.lastInst, p.lastT = b, ix, t
	}
	if p.lastEpoch[sid] == p.epoch && p.lastAt[sid] == t {
		// The series again at the same time: the last value wins, and the
		// repeat costs no memory (a file of one sample repeated a hundred
		// million times is held as one sample).
		if i := p.lastPos[sid]; int(i) < len(b.sids) && b.sids[i] == sid {
			b.vals[i] = v
			p.dups++
			return nil
		}
	}
	p.lastAt[sid], p.lastPos[sid], p.lastEpoch[sid] = t, int32(len(b.sids)), p.epoch
	b.sids = append(b.sids, sid)
	b.vals = append(b.vals, v)
	p.buffered++
	if p.w != nil && p.buffered >= p.flushAt {
		if err := p.flushEarly(); err != nil {
			return err
		}
	}
	return nil
}

// seriesCost is about what one series costs while a file is read (its text
// as written, its canonical key, its name and labels, the lookups; measured:
// 689 bytes for node_exporter series of 200,000 instances), for the message
// of the series cap.
const seriesCost = 700

// capError is input that exceeds one of the fixed budgets of reading a
// file: it fails even in lenient mode (skipping the line would not bring
// the input under the budget).
type capError struct{ error }

func (e *capError) Unwrap() error { return e.error }

// newEpoch forgets where the latest sample of every series is held.
func (p *textParser) newEpoch() {
	p.epoch++
	if p.epoch == 0 { // wrapped
		clear(p.lastEpoch)
		p.epoch = 1
	}
}

// compact drops the samples that a later one of the same series at the
// same time replaces, from every bucket held (the last one wins, as at
// emit).
func (p *textParser) compact() {
	p.growGen()
	for _, in := range p.insts {
		for _, b := range in.buckets {
			p.nextGen()
			k := 0
			for j, sid := range b.sids {
				if p.gen[sid] == p.cur {
					b.vals[p.pos[sid]] = b.vals[j]
					continue
				}
				p.gen[sid] = p.cur
				p.pos[sid] = int32(k)
				b.sids[k], b.vals[k] = sid, b.vals[j]
				k++
			}
			p.dups += len(b.sids) - k
			p.buffered -= len(b.sids) - k
			b.sids, b.vals = slices.Clip(b.sids[:k]), slices.Clip(b.vals[:k])
		}
	}
	p.newEpoch()
}

func (p *textParser) growGen() {
	if len(p.gen) < len(p.tmpl) {
		p.gen = append(p.gen, make([]uint32, len(p.tmpl)-len(p.gen))...)
		p.pos = append(p.pos, make([]int32, len(p.tmpl)-len(p.pos))...)
	}
}

func (p *textParser) nextGen() {
	p.cur++
	if p.cur == 0 { // wrapped: reset the generations
		clear(p.gen)
		p.cur = 1
	}
}

// flushEarly writes out the complete snapshots (older than the newest) of
// every instance whose input has been in time order so far.
func (p *textParser) flushEarly() error {
	for _, in := range p.insts {
		if !in.monotone || !in.has {
			continue
		}
		var ts []int64
		for t := range in.buckets {
			if t < in.maxT {
				ts = append(ts, t)
			}
		}
		if len(ts) == 0 {
			continue
		}
		if err := p.emit(in, ts); err != nil {
			return err
		}
		in.flushed = true
		in.flushedT = slices.Max(ts)
	}
	p.lastB = nil
	p.newEpoch()
	if p.buffered >= p.flushAt {
		// What is left is not in time order: drop the repeats it holds
		// before holding more.
		p.compact()
	}
	if p.buffered >= p.opt.MaxHeldSamples {
		return &capError{fmt.Errorf("more than %d samples (about %d MiB) are held because the input is not in time order per instance "+
			"(grouped by series, as a TSDB dump is): memdoctor holds at most that many; sort the file by time, or split it by instance",
			p.opt.MaxHeldSamples, p.opt.MaxHeldSamples*12>>20)}
	}
	p.flushAt = min(p.buffered+p.opt.BufferSamples, p.opt.MaxHeldSamples)
	return nil
}

// emit writes the given buckets of an instance, in time order, and drops
// them.
func (p *textParser) emit(in *textInstance, ts []int64) error {
	slices.Sort(ts)
	p.growGen()
	var batch []*sample.Snapshot
	n := 0
	for _, t := range ts {
		b := in.buckets[t]
		delete(in.buckets, t)
		p.buffered -= len(b.sids)
		p.nextGen()
		s := &sample.Snapshot{Time: time.UnixMilli(t).UTC(), Metrics: make([]sample.Metric, 0, len(b.sids))}
		for j, sid := range b.sids {
			if p.gen[sid] == p.cur {
				s.Metrics[p.pos[sid]].Value = b.vals[j]
				p.dups++
				continue
			}
			p.gen[sid] = p.cur
			p.pos[sid] = int32(len(s.Metrics))
			m := p.tmpl[sid]
			m.Value = b.vals[j]
			s.Metrics = append(s.Metrics, m)
		}
		batch = append(batch, s)
		n += len(s.Metrics)
		if n >= p.opt.BatchSamples {
			if err := p.w.write(in.name, batch); err != nil {
				return err
			}
			batch, n = nil, 0
		}
	}
	return p.w.write(in.name, batch)
}

// finish writes every buffered snapshot and the notes.
func (p *textParser) finish() error {
	// The lookups of series text are done with: let the store have their
	// memory (a file of 100 000 instances holds as many series).
	p.raw, p.canon, p.instIx = nil, nil, nil
	order := p.insts
	p.insts = nil
	slices.SortFunc(order, func(a, b *textInstance) int { return strings.Compare(a.name, b.name) })
	for i, in := range order {
		ts := make([]int64, 0, len(in.buckets))
		for t := range in.buckets {
			ts = append(ts, t)
		}
		if err := p.emit(in, ts); err != nil {
			return err
		}
		order[i] = nil // written: its buckets are garbage
	}
	w := p.w
	if err := w.flush(); err != nil {
		return err
	}
	if p.noTS > 0 {
		w.notes.add(sample.Note{Source: p.file,
			Message: fmt.Sprintf("%s no timestamp: stamped with the file's modification time %s",
				samples(p.noTS, "has", "have"), time.UnixMilli(p.mtimeMs).UTC().Format(time.RFC3339))})
	}
	if p.dups > 0 {
		w.skipped += p.dups
		w.notes.add(sample.Note{Source: p.file,
			Message: fmt.Sprintf("%s a series at the same time: the last one was kept", samples(p.dups, "repeats", "repeat"))})
	}
	if p.cutShort != nil {
		w.notes.add(sample.Note{Source: p.file, Message: p.cutShort.Error(), Hides: "whatever followed the last line"})
	}
	if p.nonFinite > 0 {
		w.skipped += p.nonFinite
		w.notes.add(sample.Note{Source: p.file,
			Message: fmt.Sprintf("%s NaN or infinite, which no memory size or counter can be: dropped (first: %s)", samples(p.nonFinite, "is", "are"), p.firstNonFinite),
			Hides:   "those samples", Fix: "fix what wrote the file"})
	}
	if p.bad > 0 {
		w.skipped += p.bad
		w.notes.add(sample.Note{Source: p.file,
			Message: fmt.Sprintf("%d malformed lines skipped (first: %v)", p.bad, p.firstBad),
			Hides:   "the samples on those lines"})
	}
	return nil
}

// sniffText checks that a file starts like a text exposition: its first
// sample line parses, or it is malformed in a file that says it is text
// (a HELP, TYPE or EOF line before it, or a text exposition extension);
// reading then reports the bad line.
func sniffText(path string) error {
	f, err := safeio.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	r, err := maybeGunzip(f, path)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	n, err := io.ReadFull(r, buf)
	full := err == nil
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	buf = buf[:n]
	if bytes.IndexByte(buf, 0) >= 0 {
		return errors.New("binary data")
	}
	if full { // the last line may be cut by the buffer
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			buf = buf[:i]
		}
	}
	p := newTextParser(path, "x", IngestOptions{BufferSamples: math.MaxInt}.withDefaults(), time.Time{}, nil)
	comments := false
	for i, l := range bytes.Split(buf, []byte("\n")) {
		l = exposition.TrimBlanks(dropCR(l))
		if i == 0 {
			l = bytes.TrimPrefix(l, []byte("\xef\xbb\xbf"))
		}
		if len(l) == 0 {
			continue
		}
		if l[0] == '#' {
			if bytes.HasPrefix(l, []byte("# HELP ")) || bytes.HasPrefix(l, []byte("# TYPE ")) || string(l) == "# EOF" {
				comments = true
			}
			continue
		}
		if err := p.parseLine(l); err != nil && !comments && !hasTextExt(path) {
			return &InputError{File: path, Line: i + 1, Err: err}
		}
		return nil
	}
	if comments {
		return nil
	}
	return errors.New("no metric lines")
}

// samples is "1 sample has", "2 samples have": a count of samples with its
// verb in the same number.
func samples[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 sample " + one
	}
	return fmt.Sprintf("%d samples %s", n, many)
}
