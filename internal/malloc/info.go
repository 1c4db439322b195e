// Package malloc reads the state of glibc's malloc (ptmalloc2) inside a
// running process: its arenas, their free chunks, and how much of that free
// memory malloc_trim(0) could give back to the kernel. It calls malloc_info
// and malloc_trim in the process (holding one thread briefly), or reads
// the dumps of memdoctor's preload library without pausing it.
package malloc

// malloc_info(0, fp) XML (malloc/malloc.c, __malloc_info; glibc 2.10+,
// format as of 2.36; element and attribute names exact):
//
//	<malloc version="1">
//	<heap nr="0">                                      one per arena, in arena-list order
//	<sizes>
//	  <size from="17" to="32" total="96" count="3"/>   fastbin: from = size-15, to = size, exact
//	  <size from="33" to="33" total="495" count="15"/> bin: raw size fields (flag bit 1 included)
//	  <unsorted from="657" to="49393" total="19708464" count="400"/>
//	</sizes>
//	<total type="fast" count="0" size="0"/>            fastbin chunks
//	<total type="rest" count="401" size="19759280"/>   bin chunks + the top chunk (2.30+)
//	<system type="current" size="20324352"/>           system_mem
//	<system type="max" size="20324352"/>               max_system_mem
//	<aspace type="total" size="20324352"/>
//	<aspace type="mprotect" size="20324352"/>
//	<aspace type="subheaps" size="1"/>                 non-main arenas only: a COUNT of heaps
//	</heap>
//	…
//	<total type="fast" count="0" size="0"/>            sums over the arenas
//	<total type="rest" count="803" size="40699536"/>
//	<total type="mmap" count="0" size="0"/>            mmapped chunks (global: mp_.n_mmaps, mmapped_mem)
//	<system type="current" size="41836544"/>
//	<system type="max" size="41836544"/>
//	<aspace type="total" size="41836544"/>
//	<aspace type="mprotect" size="41836544"/>
//	</malloc>
//
// What the numbers are, from the 2.36 source:
//
//   - Bin lines sum r->size, the raw size field, so every free chunk adds
//     its PREV_INUSE bit (always set on a binned chunk): totals are one byte
//     per chunk above the real sizes, and from/to are odd. mallinfo2's
//     fordblks uses chunksize() and is smaller by the same amount.
//   - "rest" starts with the top chunk (count 1, chunksize(top)) since 2.30
//     (BZ 24026); before, the top chunk was in no line. So the top chunk is
//     rest − Σ bin lines, and its count is rest count − Σ bin counts.
//   - tcache chunks are invisible: they count as in use.
//   - glibc 2.43 removes fastbins and every type="fast" line; a master
//     snapshot briefly printed "<sizes>" where "</sizes>" belongs (fixed by
//     commit 6c8af6a43c). The parser does not track nesting, so neither
//     matters, and unknown elements and attributes are ignored.

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// Info is one malloc_info document.
type Info struct {
	// Version is the version attribute of <malloc> ("1").
	Version string `json:"version"`
	// PageSize is the page size RetainedBytes was computed with.
	PageSize int64 `json:"page_size"`
	// Arenas lists every <heap>, in the order malloc_info printed them.
	Arenas []Arena `json:"arenas"`
	// Totals are the document's global totals (sums of the arenas where
	// the document has none).
	Totals Totals `json:"totals"`
	// Warnings lists what was odd in the document and how it was read.
	Warnings []string `json:"warnings,omitempty"`
}

// Arena is one <heap> element: one malloc arena.
type Arena struct {
	// Nr is the nr attribute: 0 is the main arena.
	Nr int `json:"nr"`
	// SystemBytes is system_mem: memory the arena got from the kernel
	// (sbrk heap or mmapped heaps), resident or not.
	SystemBytes int64 `json:"system_bytes"`
	// SystemMaxBytes is max_system_mem.
	SystemMaxBytes int64 `json:"system_max_bytes"`
	// FreeBytes is free memory inside the arena: fastbin chunks, bin
	// chunks and the top chunk ("fast" + "rest" totals).
	FreeBytes int64 `json:"free_bytes"`
	// FreeChunks counts the free chunks, the top chunk included.
	FreeChunks int64 `json:"free_chunks"`
	// FastBytes and FastChunks are the type="fast" total (0 in 2.43+).
	FastBytes  int64 `json:"fast_bytes"`
	FastChunks int64 `json:"fast_chunks"`
	// InUseBytes is SystemBytes − FreeBytes: allocated chunks, tcache
	// chunks and chunk headers.
	InUseBytes int64 `json:"in_use_bytes"`
	// TopBytes is the top chunk (rest − bin lines); -1 when the document
	// predates 2.30 and does not count it.
	TopBytes int64 `json:"top_bytes"`
	// LargestFreeChunkBytes is the largest chunk size in the bin lines
	// (fastbins, bins, unsorted; not the top chunk).
	LargestFreeChunkBytes int64 `json:"largest_free_chunk_bytes"`
	// RetainedBytes estimates what malloc_trim(0) can give back from this
	// arena (see Info.computeRetained).
	RetainedBytes int64 `json:"retained_bytes"`
	// AspaceBytes and AspaceMprotectBytes are the aspace totals.
	AspaceBytes         int64 `json:"aspace_bytes"`
	AspaceMprotectBytes int64 `json:"aspace_mprotect_bytes"`
	// Subheaps is the number of mmapped heaps of a non-main arena (0 for
	// the main arena).
	Subheaps int64 `json:"subheaps,omitempty"`
	// Bins are the <size> and <unsorted> lines.
	Bins []Bin `json:"bins"`

	restBytes, restChunks int64
	haveFast, haveRest    bool
}

// Bin is one line of <sizes>.
type Bin struct {
	// Kind is "fast", "bin" or "unsorted".
	Kind string `json:"kind"`
	// From and To are the smallest and largest chunk size as printed (for
	// bins and unsorted: raw size fields, flag bit included).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// TotalBytes and Count are the line's total and count.
	TotalBytes int64 `json:"total_bytes"`
	Count      int64 `json:"count"`
}

// Totals are the process-wide figures.
type Totals struct {
	// SystemBytes is Σ system_mem (mallinfo2.arena).
	SystemBytes int64 `json:"system_bytes"`
	// SystemMaxBytes is Σ max_system_mem.
	SystemMaxBytes int64 `json:"system_max_bytes"`
	// InUseBytes is SystemBytes − FreeBytes (mallinfo2.uordblks, which
	// includes chunks cached in tcache).
	InUseBytes int64 `json:"in_use_bytes"`
	// FreeBytes is fast + rest (mallinfo2.fordblks, plus one byte per
	// binned chunk: malloc_info sums raw size fields).
	FreeBytes int64 `json:"free_bytes"`
	// FreeChunks counts the free chunks (mallinfo2.ordblks + smblks).
	FreeChunks int64 `json:"free_chunks"`
	// RetainedBytes is Σ Arena.RetainedBytes: free memory malloc_trim(0)
	// can hand back to the kernel.
	RetainedBytes int64 `json:"retained_bytes"`
	// MmapBytes and MmapChunks are the chunks allocated with mmap
	// (mallinfo2.hblkhd, hblks); they are not in any arena.
	MmapBytes  int64 `json:"mmap_bytes"`
	MmapChunks int64 `json:"mmap_chunks"`
	// AspaceBytes is the total aspace.
	AspaceBytes int64 `json:"aspace_bytes"`
	// ArenaCount is the number of arenas (len(Arenas)).
	ArenaCount int `json:"arena_count"`
}

// ErrNotMallocInfo reports a document without a <malloc> element.
var ErrNotMallocInfo = errors.New("not malloc_info XML (no <malloc> element)")

// ErrTruncated reports a document that ends before </malloc>.
var ErrTruncated = errors.New("malloc_info XML ends before </malloc>")

// chunkHeader is sizeof(struct malloc_chunk) on 64-bit: malloc_trim's
// mtrim() madvises only page-aligned memory at least this far into a chunk.
const chunkHeader = 48

// minChunk is MINSIZE on 64-bit; systrim keeps it in the top chunk.
const minChunk = 32

// maxValue bounds every number: nothing in a real document comes near
// 2^62 bytes, and the bound keeps every sum inside int64.
const maxValue = 1 << 62

// ParseInfo parses malloc_info XML and computes the totals, with the page
// size of this host for RetainedBytes (a document read from another host:
// call SetPageSize).
func ParseInfo(r io.Reader) (*Info, error) {
	return parseInfo(r, int64(os.Getpagesize()))
}

func parseInfo(r io.Reader, pageSize int64) (*Info, error) {
	d := xml.NewDecoder(r)
	d.Strict = false
	info := &Info{PageSize: pageSize, Arenas: []Arena{}}
	var (
		inMalloc, done bool
		cur            *Arena
		global         Totals
		gRest          bool
		gSystem, gMmap bool
		line           = func() int { l, _ := d.InputPos(); return l }
	)
	for !done {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) && se.Msg == "unexpected EOF" && inMalloc {
				return nil, fmt.Errorf("%w (in line %d)", ErrTruncated, se.Line)
			}
			return nil, fmt.Errorf("malloc_info: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if name == "malloc" {
				if inMalloc {
					return nil, fmt.Errorf("malloc_info: line %d: <malloc> inside <malloc>", line())
				}
				inMalloc = true
				info.Version = attr(t, "version")
				if info.Version != "1" {
					info.warn("malloc version %q (known: 1); read as version 1", info.Version)
				}
				continue
			}
			if !inMalloc {
				continue
			}
			a := attrs{t: t, line: line()}
			switch name {
			case "heap":
				if cur != nil {
					info.warn("line %d: <heap> before </heap> of arena %d; closed it", a.line, cur.Nr)
				}
				nr, ok := a.num("nr")
				if !ok {
					return nil, a.err
				}
				if nr > math.MaxInt32 {
					return nil, fmt.Errorf("malloc_info: line %d: heap nr %d", a.line, nr)
				}
				info.Arenas = append(info.Arenas, Arena{Nr: int(nr), TopBytes: -1, Bins: []Bin{}})
				cur = &info.Arenas[len(info.Arenas)-1]
			case "size", "unsorted":
				if cur == nil {
					info.warn("line %d: <%s> outside <heap>; ignored", a.line, name)
					continue
				}
				b := Bin{Kind: "unsorted"}
				var ok1, ok2, ok3, ok4 bool
				b.From, ok1 = a.num("from")
				b.To, ok2 = a.num("to")
				b.TotalBytes, ok3 = a.num("total")
				b.Count, ok4 = a.num("count")
				if !ok1 || !ok2 || !ok3 || !ok4 {
					return nil, a.err
				}
				if name == "size" {
					b.Kind = "bin"
					// Fastbin lines: from = size − (MALLOC_ALIGNMENT − 1),
					// to = size, a multiple of 16. Bin lines hold raw size
					// fields with PREV_INUSE set: odd.
					if b.To%16 == 0 && b.To-b.From == 15 {
						b.Kind = "fast"
					}
				}
				cur.Bins = append(cur.Bins, b)
			case "total", "system", "aspace":
				typ := attr(t, "type")
				var v, n int64
				var ok bool
				if name == "total" {
					if n, ok = a.num("count"); !ok {
						return nil, a.err
					}
				}
				if v, ok = a.num("size"); !ok {
					return nil, a.err
				}
				if cur != nil {
					cur.set(info, name, typ, v, n, a.line)
				} else {
					global.set(info, name, typ, v, n, a.line, &gRest, &gSystem, &gMmap)
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "heap":
				cur = nil
			case "malloc":
				if inMalloc {
					done = true
				}
			}
		}
	}
	if !inMalloc {
		return nil, ErrNotMallocInfo
	}
	if !done {
		return nil, ErrTruncated
	}
	info.finish(global, gRest, gSystem, gMmap)
	return info, nil
}

// attrs reads numeric attributes of one element and keeps the first error.
type attrs struct {
	t    xml.StartElement
	line int
	err  error
}

// num reads a non-negative integer attribute. A missing or malformed one is
// an error: a document that lies about one number cannot be trusted for
// the others.
func (a *attrs) num(name string) (int64, bool) {
	for _, at := range a.t.Attr {
		if at.Name.Local != name {
			continue
		}
		v, err := strconv.ParseUint(at.Value, 10, 64)
		if err != nil || v > maxValue {
			a.err = fmt.Errorf("malloc_info: line %d: <%s %s=%q>: want a number below 2^62", a.line, a.t.Name.Local, name, at.Value)
			return 0, false
		}
		return int64(v), true
	}
	a.err = fmt.Errorf("malloc_info: line %d: <%s> without %s", a.line, a.t.Name.Local, name)
	return 0, false
}

func attr(t xml.StartElement, name string) string {
	for _, at := range t.Attr {
		if at.Name.Local == name {
			return at.Value
		}
	}
	return ""
}

func (i *Info) warn(format string, a ...any) {
	if len(i.Warnings) < 20 {
		i.Warnings = append(i.Warnings, fmt.Sprintf(format, a...))
	}
}

func (ar *Arena) set(info *Info, elem, typ string, v, n int64, line int) {
	switch elem + "/" + typ {
	case "total/fast":
		ar.FastBytes, ar.FastChunks, ar.haveFast = v, n, true
	case "total/rest":
		ar.restBytes, ar.restChunks, ar.haveRest = v, n, true
	case "system/current":
		ar.SystemBytes = v
	case "system/max":
		ar.SystemMaxBytes = v
	case "aspace/total":
		ar.AspaceBytes = v
	case "aspace/mprotect":
		ar.AspaceMprotectBytes = v
	case "aspace/subheaps":
		ar.Subheaps = v
	default:
		info.warn("line %d: arena %d: unknown <%s type=%q>; ignored", line, ar.Nr, elem, typ)
	}
}

func (t *Totals) set(info *Info, elem, typ string, v, n int64, line int, rest, system, mmap *bool) {
	switch elem + "/" + typ {
	case "total/fast":
		t.FreeBytes = add(t.FreeBytes, v)
		t.FreeChunks = add(t.FreeChunks, n)
	case "total/rest":
		t.FreeBytes = add(t.FreeBytes, v)
		t.FreeChunks = add(t.FreeChunks, n)
		*rest = true
	case "total/mmap":
		t.MmapBytes, t.MmapChunks, *mmap = v, n, true
	case "system/current":
		t.SystemBytes, *system = v, true
	case "system/max":
		t.SystemMaxBytes = v
	case "aspace/total":
		t.AspaceBytes = v
	case "aspace/mprotect":
	default:
		info.warn("line %d: unknown global <%s type=%q>; ignored", line, elem, typ)
	}
}

// add adds two values in [0, maxValue], saturating at maxValue.
func add(a, b int64) int64 {
	if a > maxValue-b {
		return maxValue
	}
	return a + b
}

// finish derives the per-arena figures and the totals.
func (i *Info) finish(g Totals, gRest, gSystem, gMmap bool) {
	var sum Totals
	for k := range i.Arenas {
		ar := &i.Arenas[k]
		if !ar.haveRest {
			i.warn("arena %d: no <total type=\"rest\">; its free memory is the sum of its bin lines", ar.Nr)
		}
		var binBytes, binCount, fastBytes, fastCount int64
		for _, b := range ar.Bins {
			size := b.To
			if b.Kind == "fast" {
				fastBytes, fastCount = add(fastBytes, b.TotalBytes), add(fastCount, b.Count)
			} else {
				binBytes, binCount = add(binBytes, b.TotalBytes), add(binCount, b.Count)
				size &^= 7 // the flag bits of the raw size field
			}
			ar.LargestFreeChunkBytes = max(ar.LargestFreeChunkBytes, size)
		}
		if !ar.haveFast {
			// glibc 2.43+ has no fastbins; older documents always print it.
			ar.FastBytes, ar.FastChunks = fastBytes, fastCount
		}
		rest, restN := ar.restBytes, ar.restChunks
		if !ar.haveRest {
			rest, restN = binBytes, binCount
		}
		switch {
		case restN == binCount+1 && rest >= binBytes:
			ar.TopBytes = rest - binBytes // 2.30+: rest counts the top chunk
		case restN == binCount && rest == binBytes:
			ar.TopBytes = -1 // before 2.30: the top chunk is in no total
		default:
			i.warn("arena %d: rest total (%d chunks, %d bytes) does not match its bin lines (%d chunks, %d bytes)", ar.Nr, restN, rest, binCount, binBytes)
		}
		ar.FreeBytes = add(ar.FastBytes, rest)
		ar.FreeChunks = add(ar.FastChunks, restN)
		ar.InUseBytes = ar.SystemBytes - ar.FreeBytes
		if ar.InUseBytes < 0 {
			i.warn("arena %d: free bytes %d above system bytes %d; in use shown as 0", ar.Nr, ar.FreeBytes, ar.SystemBytes)
			ar.InUseBytes = 0
		}
		ar.RetainedBytes = i.retained(ar)
		sum.SystemBytes = add(sum.SystemBytes, ar.SystemBytes)
		sum.SystemMaxBytes = add(sum.SystemMaxBytes, ar.SystemMaxBytes)
		sum.FreeBytes = add(sum.FreeBytes, ar.FreeBytes)
		sum.FreeChunks = add(sum.FreeChunks, ar.FreeChunks)
		sum.RetainedBytes = add(sum.RetainedBytes, ar.RetainedBytes)
		sum.AspaceBytes = add(sum.AspaceBytes, ar.AspaceBytes)
	}
	t := g
	if !gSystem {
		t.SystemBytes, t.SystemMaxBytes, t.AspaceBytes = sum.SystemBytes, sum.SystemMaxBytes, sum.AspaceBytes
	}
	if !gRest {
		// No global rest total: the global fast total alone (if any) is
		// not the free memory; take the arenas' sums.
		t.FreeBytes, t.FreeChunks = sum.FreeBytes, sum.FreeChunks
	}
	if !gMmap {
		i.warn("no <total type=\"mmap\">: mmapped chunks unknown (0)")
	}
	if (gSystem && t.SystemBytes != sum.SystemBytes) || (gRest && t.FreeBytes != sum.FreeBytes) {
		i.warn("global totals (system %d, free %d) differ from the sums of the arenas (system %d, free %d); the global ones are shown",
			t.SystemBytes, t.FreeBytes, sum.SystemBytes, sum.FreeBytes)
	}
	t.RetainedBytes = sum.RetainedBytes
	t.InUseBytes = t.SystemBytes - t.FreeBytes
	if t.InUseBytes < 0 {
		t.InUseBytes = 0
	}
	t.ArenaCount = len(i.Arenas)
	i.Totals = t
}

// SetPageSize recomputes RetainedBytes for another page size (a document
// from a host with 16 or 64 KiB pages).
func (i *Info) SetPageSize(pageSize int64) {
	if pageSize <= 0 {
		return
	}
	i.PageSize = pageSize
	var sum int64
	for k := range i.Arenas {
		i.Arenas[k].RetainedBytes = i.retained(&i.Arenas[k])
		sum = add(sum, i.Arenas[k].RetainedBytes)
	}
	i.Totals.RetainedBytes = sum
}

// retained estimates the bytes malloc_trim(0) (glibc 2.8+) gives back to
// the kernel from one arena. mtrim() madvise(MADV_DONTNEED)s, for every
// chunk in the unsorted bin and in the bins of chunks of a page or more,
// the whole pages that lie at least sizeof(struct malloc_chunk) = 48 bytes
// into the chunk; then, for the main arena only, systrim() shrinks the top
// chunk to one page (pad 0 keeps MINSIZE, rounded down to pages).
//
// The document gives each bin line's chunk count and byte total, not each
// chunk's address, so a chunk of S bytes is counted as S − 48 − page bytes:
// the expected whole-page bytes of an interval of S − 48 bytes placed at a
// random page offset. Per line that is max(0, total − count·(page + 49)),
// the 49th byte being the flag bit in each raw size. Chunks below a page
// give nothing by this formula, as in mtrim. Fastbin and tcache chunks are
// not counted (mtrim consolidates fastbins first, so it may find a little
// more). The top chunks of other arenas are not trimmed by malloc_trim.
//
// Two limits: MADV_DONTNEED does not change the document, so pages
// already given back by an earlier trim, or never touched, are counted
// again (compare with RSS: the real gain is at most the process' RssAnon);
// and the per-line formula is a lower bound of the expectation when sizes
// in a line vary.
func (i *Info) retained(ar *Arena) int64 {
	ps := i.PageSize
	var r int64
	for _, b := range ar.Bins {
		if b.Kind == "fast" {
			continue
		}
		if per := ps + chunkHeader + 1; b.Count < b.TotalBytes/per {
			r = add(r, b.TotalBytes-b.Count*per)
		}
	}
	if ar.Nr == 0 && ar.TopBytes > 0 {
		if v := (ar.TopBytes - minChunk - 1) / ps * ps; v > 0 {
			r = add(r, v)
		}
	}
	return min(r, ar.FreeBytes)
}
