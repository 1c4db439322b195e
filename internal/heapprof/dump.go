// Package heapprof reads the sampled heap profile that the preload library
// writes (MEMDOCTOR_PROFILE, preload/README.md "Heap profile"), names its
// call stacks from the target's own ELF symbol tables, ranks the
// allocation sites by the bytes they hold and by their growth between two
// dumps, and writes the profile in pprof's format.
package heapprof

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// ErrFormat is returned for a dump that is not the library's.
var ErrFormat = errors.New("not a memdoctor heap profile")

// maxDepth is the library's MAX_DEPTH.
const maxDepth = 32

// Dump is one dump of the library: the stacks of its sampled allocations
// with the bytes and objects they stand for (estimates scaled from the
// samples), and the process' mappings when it was written.
type Dump struct {
	PID     int
	Rate    uint64 // mean bytes between samples
	Time    time.Time
	Samples uint64 // allocations sampled since the start (or the fork)
	Live    uint64 // sampled blocks not freed yet
	Dropped uint64 // samples not followed: the block table was full
	Stacks  []Stack
	Maps    []procfs.Mapping
}

// Stack is one call stack of sampled allocations.
type Stack struct {
	AllocObjects, AllocBytes int64 // allocated since the start (estimates)
	InUseObjects, InUseBytes int64 // allocated and not freed (estimates)
	PCs                      []uint64
}

// Parse reads a dump. Every malformed line is an error naming it.
func Parse(data []byte) (*Dump, error) {
	head, maps, ok := bytes.Cut(data, []byte("\nmaps\n"))
	if !ok {
		return nil, fmt.Errorf("%w: no maps section (a dump cut short?)", ErrFormat)
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != "memdoctor heap profile 1" {
		return nil, fmt.Errorf("%w: first line %q", ErrFormat, lines[0])
	}
	d := &Dump{}
	for i, l := range lines[1:] {
		bad := func(why string) error { return fmt.Errorf("%w: line %d %q: %s", ErrFormat, i+2, l, why) }
		key, rest, _ := strings.Cut(l, " ")
		if key == "stack" {
			f := strings.Fields(rest)
			if len(f) < 4 || len(f) > 4+maxDepth {
				return nil, bad("want 4 counts and up to 32 addresses")
			}
			var s Stack
			for j, p := range []*int64{&s.AllocObjects, &s.AllocBytes, &s.InUseObjects, &s.InUseBytes} {
				v, err := strconv.ParseInt(f[j], 10, 64)
				if err != nil || v < 0 {
					return nil, bad("a count is not a number")
				}
				*p = v
			}
			for _, h := range f[4:] {
				pc, err := strconv.ParseUint(h, 16, 64)
				if err != nil {
					return nil, bad("an address is not hex")
				}
				s.PCs = append(s.PCs, pc)
			}
			d.Stacks = append(d.Stacks, s)
			continue
		}
		v, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return nil, bad("not a number")
		}
		switch key {
		case "pid":
			d.PID = int(v)
		case "rate":
			d.Rate = v
		case "time":
			d.Time = time.Unix(0, int64(v)).UTC()
		case "samples":
			d.Samples = v
		case "live":
			d.Live = v
		case "dropped":
			d.Dropped = v
		default:
			// later versions may add header lines
		}
	}
	if d.Rate == 0 || d.Time.IsZero() {
		return nil, fmt.Errorf("%w: no rate or time line", ErrFormat)
	}
	m, err := procfs.ParseMaps(maps, "maps section")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	d.Maps = m
	return d, nil
}
