package source

// The runs of a text file's index, past a chunk of them, are kept on disk
// rather than in memory: the scan sorts each chunk by name and writes it
// to an unlinked temporary file, and the chunks are then merged, 64 at a
// time, into one sorted sequence, which is read back in order. Memory is
// a chunk's and the merge's buffers, whatever the number of instances.

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

const (
	// indexChunkRuns and indexChunkBytes are the runs, and the bytes of
	// their names, that the scan keeps in memory before it writes them to
	// disk: about 1.3 MB of runs and their names (instances named as
	// node_exporter's are, 20 bytes) and as much again of the map that
	// finds a chunk's repeated names as it is read.
	indexChunkRuns  = 16384
	indexChunkBytes = 4 << 20
	// mergeFanIn is how many sorted chunks are merged at once: more are
	// merged in passes, each writing a longer chunk to the same file.
	mergeFanIn = 64
	// mergeBuf is the read buffer of each chunk merged: 1 MiB for 64.
	mergeBuf = 16 << 10
)

// runFile holds sorted sequences (segments) of an index's runs in a
// temporary file, unlinked as soon as it is made: nothing is left behind
// however the process ends.
type runFile struct {
	f    *os.File
	w    *bufio.Writer
	size int64 // bytes written
	segs []runSeg
	buf  []byte
	// longest is the longest name written: a record read back that says
	// more is not one we wrote (a name can be as long as a line, 16 MiB).
	longest uint64
}

// runSeg is a segment of a runFile: n runs sorted by name in bytes
// [off, off+len).
type runSeg struct {
	off, len int64
	n        int
}

func newRunFile() (*runFile, error) {
	f, err := os.CreateTemp("", "memdoctor-index-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &runFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (rf *runFile) close() {
	_ = rf.f.Close() // unlinked: closing frees it
}

func (rf *runFile) writeErr(err error) error {
	return fmt.Errorf("writing the index of the file's instances to a temporary file: %w (set TMPDIR to a writable directory with room)", err)
}

// put appends r to the segment being written.
func (rf *runFile) put(r textRun) error {
	b := rf.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(r.name)))
	b = append(b, r.name...)
	b = binary.AppendUvarint(b, uint64(r.off))
	b = binary.AppendUvarint(b, uint64(r.end-r.off))
	b = binary.AppendUvarint(b, uint64(r.line))
	if cap(b) > 64<<10 {
		rf.buf = nil // a long name's buffer is not kept
	} else {
		rf.buf = b
	}
	rf.longest = max(rf.longest, uint64(len(r.name)))
	n, err := rf.w.Write(b)
	rf.size += int64(n)
	if err != nil {
		return rf.writeErr(err)
	}
	return nil
}

// addChunk sorts runs by name and writes them as a segment. Two runs of
// one name make it fail with an error wrapping ErrNoStream.
func (rf *runFile) addChunk(runs []textRun) error {
	slices.SortStableFunc(runs, func(a, b textRun) int { return strings.Compare(a.name, b.name) })
	if err := checkRepeats(runs); err != nil {
		return err
	}
	seg := runSeg{off: rf.size, n: len(runs)}
	for _, r := range runs {
		if err := rf.put(r); err != nil {
			return err
		}
	}
	if err := rf.w.Flush(); err != nil {
		return rf.writeErr(err)
	}
	seg.len = rf.size - seg.off
	rf.segs = append(rf.segs, seg)
	return nil
}

// checkRepeats fails when two runs of runs, sorted by name, have the same
// name: the instance's lines are not together.
func checkRepeats(runs []textRun) error {
	for i := 1; i < len(runs); i++ {
		if runs[i].name == runs[i-1].name {
			return repeated(runs[i-1], runs[i])
		}
	}
	return nil
}

func repeated(a, b textRun) error {
	return fmt.Errorf("instance %q has lines at lines %d and %d, with other instances' between: %w",
		a.name, min(a.line, b.line), max(a.line, b.line), ErrNoStream)
}

// finish merges the segments written into one, mergeFanIn at a time, and
// fails with an error wrapping ErrNoStream when two runs have one name.
func (rf *runFile) finish() error {
	for len(rf.segs) > 1 {
		k := min(len(rf.segs), mergeFanIn)
		seg, err := rf.merge(rf.segs[:k])
		if err != nil {
			return err
		}
		rf.segs = append(rf.segs[k:], seg)
	}
	return nil
}

// merge writes the runs of segs, sorted by name, as a new segment.
func (rf *runFile) merge(segs []runSeg) (runSeg, error) {
	seg := runSeg{off: rf.size}
	var prev textRun
	err := rf.eachMerged(segs, func(r textRun) error {
		if seg.n > 0 && r.name == prev.name {
			return repeated(prev, r)
		}
		prev = r
		seg.n++
		return rf.put(r)
	})
	if err != nil {
		return runSeg{}, err
	}
	if err := rf.w.Flush(); err != nil {
		return runSeg{}, rf.writeErr(err)
	}
	seg.len = rf.size - seg.off
	return seg, nil
}

// runHeap orders the next run of each segment merged by name, then by the
// segment's place (the order of a stable sort).
type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := strings.Compare(h[i].cur.name, h[j].cur.name); c != 0 {
		return c < 0
	}
	return h[i].order < h[j].order
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// eachMerged gives fn the runs of segs in name order.
func (rf *runFile) eachMerged(segs []runSeg, fn func(textRun) error) error {
	if len(segs) == 1 {
		return rf.each(segs[0], fn)
	}
	h := make(runHeap, 0, len(segs))
	for i, s := range segs {
		rd := rf.reader(s, mergeBuf)
		rd.order = i
		ok, err := rd.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, rd)
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		rd := h[0]
		if err := fn(rd.cur); err != nil {
			return err
		}
		ok, err := rd.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// each gives fn the runs of seg in order.
func (rf *runFile) each(seg runSeg, fn func(textRun) error) error {
	rd := rf.reader(seg, 64<<10)
	for {
		ok, err := rd.next()
		if err != nil || !ok {
			return err
		}
		if err := fn(rd.cur); err != nil {
			return err
		}
	}
}

// runReader reads the runs of a segment back.
type runReader struct {
	rf    *runFile
	br    *bufio.Reader
	left  int
	order int
	cur   textRun
	name  []byte
}

func (rf *runFile) reader(seg runSeg, size int) *runReader {
	size = int(min(int64(size), max(seg.len, 16)))
	return &runReader{rf: rf, br: bufio.NewReaderSize(io.NewSectionReader(rf.f, seg.off, seg.len), size), left: seg.n}
}

// next reads the next run into cur, or says there is none left.
func (rd *runReader) next() (bool, error) {
	if rd.left == 0 {
		return false, nil
	}
	bad := func(err error) (bool, error) {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return false, fmt.Errorf("reading back the index of the file's instances from a temporary file: %w", err)
	}
	l, err := binary.ReadUvarint(rd.br)
	if err != nil {
		return bad(err)
	}
	if l > rd.rf.longest {
		return bad(errors.New("a name longer than any written"))
	}
	if uint64(cap(rd.name)) < l {
		rd.name = make([]byte, l)
	}
	name := rd.name[:l]
	if _, err := io.ReadFull(rd.br, name); err != nil {
		return bad(err)
	}
	var v [3]uint64
	for i := range v {
		if v[i], err = binary.ReadUvarint(rd.br); err != nil {
			return bad(err)
		}
	}
	rd.cur = textRun{name: string(name), off: int64(v[0]), end: int64(v[0] + v[1]), line: int(v[2])}
	rd.left--
	return true, nil
}
