package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// spillOver is the number of instances past which a diagnosis keeps their
// summaries in a temporary file rather than in memory: about 100 bytes
// each, 10 MB of 100,000 instances, which the collector scanned again and
// again as they grew.
var spillOver = 4096

// spill holds instance summaries (InstanceResult without its report) in
// a temporary file, in the order added, to be read back in that order.
// The file is unlinked as soon as it is made: nothing is left behind
// however the process ends.
type spill struct {
	f   *os.File
	w   *bufio.Writer
	n   int
	buf []byte
	err error
	// longest is the longest name written: a record read back that says
	// more is not one we wrote (a name can be as long as a line, 16 MiB).
	longest uint64
}

func newSpill() (*spill, error) {
	f, err := os.CreateTemp("", "memdoctor-instances-*")
	if err != nil {
		return nil, fmt.Errorf("a temporary file for the instances' summaries: %w (set TMPDIR to a writable directory)", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// add writes r's summary (its Report is not kept).
func (sp *spill) add(r InstanceResult) {
	if sp.err != nil {
		return
	}
	b := sp.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(r.Instance)))
	b = append(b, r.Instance...)
	for _, t := range [2]time.Time{r.From, r.To} {
		tb, err := t.MarshalBinary()
		if err != nil {
			sp.err = err
			return
		}
		b = append(b, byte(len(tb)))
		b = append(b, tb...)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.StepSeconds))
	b = binary.AppendUvarint(b, uint64(r.Series))
	b = binary.AppendUvarint(b, uint64(r.Findings))
	host := byte(0)
	if r.host {
		host = 1
	}
	b = append(b, host)
	sp.buf = b
	sp.longest = max(sp.longest, uint64(len(r.Instance)))
	if _, err := sp.w.Write(b); err != nil {
		sp.err = fmt.Errorf("writing the instances' summaries to a temporary file: %w", err)
		return
	}
	sp.n++
}

// each reads the summaries back, in the order added, into fn.
func (sp *spill) each(fn func(InstanceResult) error) error {
	if sp.err != nil {
		return sp.err
	}
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("writing the instances' summaries to a temporary file: %w", err)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(sp.f, 0, math.MaxInt64), 64<<10)
	var name []byte
	var tb [32]byte
	for i := range sp.n {
		bad := func(err error) error {
			return fmt.Errorf("reading back the summary of instance %d of %d from a temporary file: %w", i+1, sp.n, err)
		}
		l, err := binary.ReadUvarint(br)
		if err != nil {
			return bad(err)
		}
		if l > sp.longest {
			return bad(errors.New("a name longer than any written"))
		}
		if uint64(cap(name)) < l {
			name = make([]byte, l)
		}
		name = name[:l]
		if _, err := io.ReadFull(br, name); err != nil {
			return bad(err)
		}
		r := InstanceResult{Instance: string(name)}
		for _, t := range [2]*time.Time{&r.From, &r.To} {
			k, err := br.ReadByte()
			if err != nil {
				return bad(err)
			}
			if int(k) > len(tb) {
				return bad(errors.New("a time longer than any written"))
			}
			if _, err := io.ReadFull(br, tb[:k]); err != nil {
				return bad(err)
			}
			if err := t.UnmarshalBinary(tb[:k]); err != nil {
				return bad(err)
			}
		}
		var step [8]byte
		if _, err := io.ReadFull(br, step[:]); err != nil {
			return bad(err)
		}
		r.StepSeconds = math.Float64frombits(binary.LittleEndian.Uint64(step[:]))
		series, err := binary.ReadUvarint(br)
		if err != nil {
			return bad(err)
		}
		findings, err := binary.ReadUvarint(br)
		if err != nil {
			return bad(err)
		}
		host, err := br.ReadByte()
		if err != nil {
			return bad(err)
		}
		r.Series, r.Findings, r.host = int(series), int(findings), host == 1
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (sp *spill) close() {
	_ = sp.f.Close() // unlinked: closing frees it
}
