// Package pagescan counts the pages charged to each memory cgroup by reading
// /proc/kpagecgroup and /proc/kpageflags (root only), and from that tells
// how much memory removed ("dying") memory cgroups still pin.
//
// The kernel reports, for every physical page, the inode of the memory
// cgroup it is charged to — but for a page charged to an offline (removed)
// cgroup it reports the nearest live ancestor instead (page_cgroup_ino walks
// up to an online memcg). So a dying cgroup's pages show up under its
// parent. On cgroup v1 each cgroup's memory.stat also has local counters
// (cache, rss, dirty, mapped_file, shmem: the cgroup's own pages, without
// descendants), so what the scan attributes to a live cgroup beyond its own
// local counters is what its removed descendants pin. On cgroup v2
// memory.stat is hierarchical and includes dying descendants, so the split
// cannot be made from the files: the scan then reports the totals only.
//
// Cost: two 8-byte reads per page frame (about 2 MiB read per GiB of RAM),
// done in large chunks with pread; page frames not charged to any cgroup
// skip the flags read. The scan is bounded by a deadline and says when it
// stopped early.
package pagescan

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Page flag bits of /proc/kpageflags (include/uapi/linux/kernel-page-flags.h).
const (
	kpfDirty      = 4
	kpfLRU        = 5
	kpfSlab       = 7
	kpfWriteback  = 8
	kpfBuddy      = 10
	kpfMmap       = 11
	kpfAnon       = 12
	kpfSwapbacked = 14
)

// Counts are pages of one memory cgroup by kind. Kinds: File (page cache
// on the LRU, shmem included), Anon, Slab, Kernel (other charged kernel
// pages: page tables, stacks, vmalloc). Dirty, Writeback, Mapped and Shmem
// are flags over the page cache.
type Counts struct {
	Pages     int64 `json:"pages"`
	File      int64 `json:"file"`
	Anon      int64 `json:"anon"`
	Slab      int64 `json:"slab"`
	Kernel    int64 `json:"kernel"`
	Dirty     int64 `json:"dirty"`
	Writeback int64 `json:"writeback"`
	Mapped    int64 `json:"mapped"`
	Shmem     int64 `json:"shmem"`
}

func (c *Counts) addFlags(f uint64) {
	c.Pages++
	switch {
	case f&(1<<kpfSlab) != 0:
		c.Slab++
	case f&(1<<kpfAnon) != 0:
		c.Anon++
	case f&(1<<kpfLRU) != 0:
		c.File++
		if f&(1<<kpfDirty) != 0 {
			c.Dirty++
		}
		if f&(1<<kpfWriteback) != 0 {
			c.Writeback++
		}
		if f&(1<<kpfMmap) != 0 {
			c.Mapped++
		}
		if f&(1<<kpfSwapbacked) != 0 {
			c.Shmem++
		}
	default:
		c.Kernel++
	}
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Pages += o.Pages
	c.File += o.File
	c.Anon += o.Anon
	c.Slab += o.Slab
	c.Kernel += o.Kernel
	c.Dirty += o.Dirty
	c.Writeback += o.Writeback
	c.Mapped += o.Mapped
	c.Shmem += o.Shmem
}

// Options bound a scan.
type Options struct {
	// Proc is the proc mount (default "/proc").
	Proc string
	// Timeout stops the scan early (default 30 s); the result says so.
	Timeout time.Duration
	// ChunkPages is how many page frames one read covers (default 65536:
	// 512 KiB per file per read).
	ChunkPages int
}

// Result is the pages charged to each memory cgroup inode.
type Result struct {
	ByInode map[uint64]*Counts
	// Frames is how many page frames were read; RAMBytes what they cover.
	Frames   int64
	RAMBytes int64
	PageSize int
	Duration time.Duration
	// Complete is false when the deadline or the context stopped the scan.
	Complete bool
}

// Total sums every cgroup's pages.
func (r *Result) Total() Counts {
	var t Counts
	for _, c := range r.ByInode {
		t.Add(*c)
	}
	return t
}

type pfnRange struct{ start, end uint64 } // [start, end)

// ramRanges reads the System RAM ranges of /proc/iomem as page frame
// ranges. Without root the addresses read as zero: then nil.
func ramRanges(proc string, pageSize uint64) []pfnRange {
	f, err := os.Open(proc + "/iomem")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var rs []pfnRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue // nested resources
		}
		addr, name, ok := strings.Cut(line, " : ")
		if !ok || name != "System RAM" {
			continue
		}
		lo, hi, ok := strings.Cut(addr, "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		rs = append(rs, pfnRange{a / pageSize, b/pageSize + 1})
	}
	return rs
}

// ErrNotPermitted says the page files need root (CAP_SYS_ADMIN).
var ErrNotPermitted = errors.New("/proc/kpagecgroup and /proc/kpageflags need root")

// Scan reads every page frame's memory cgroup and flags.
func Scan(ctx context.Context, opt Options) (*Result, error) {
	if opt.Proc == "" {
		opt.Proc = procfs.ProcMount
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	if opt.ChunkPages <= 0 {
		opt.ChunkPages = 1 << 16
	}
	start := time.Now()
	deadline := start.Add(opt.Timeout)
	cgf, err := os.Open(opt.Proc + "/kpagecgroup")
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, ErrNotPermitted
		}
		return nil, err
	}
	defer func() { _ = cgf.Close() }()
	flf, err := os.Open(opt.Proc + "/kpageflags")
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, ErrNotPermitted
		}
		return nil, err
	}
	defer func() { _ = flf.Close() }()
	ps := uint64(os.Getpagesize())
	res := &Result{ByInode: map[uint64]*Counts{}, PageSize: int(ps), Complete: true}
	ranges := ramRanges(opt.Proc, ps)
	if len(ranges) == 0 {
		ranges = []pfnRange{{0, ^uint64(0) / 8}} // read to the end of the file
	}
	cgBuf := make([]byte, opt.ChunkPages*8)
	flBuf := make([]byte, opt.ChunkPages*8)
	var last uint64
	var lastC *Counts
scan:
	for _, r := range ranges {
		for pfn := r.start; pfn < r.end; {
			if time.Now().After(deadline) || ctx.Err() != nil {
				res.Complete = false
				break scan
			}
			n := min(uint64(opt.ChunkPages), r.end-pfn)
			got, err := cgf.ReadAt(cgBuf[:n*8], int64(pfn*8))
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("kpagecgroup at frame %d: %w", pfn, err)
			}
			frames := uint64(got / 8)
			if frames == 0 {
				break // past the last frame
			}
			res.Frames += int64(frames)
			charged := false
			for i := uint64(0); i < frames; i++ {
				if binary.NativeEndian.Uint64(cgBuf[i*8:]) != 0 {
					charged = true
					break
				}
			}
			if charged {
				fgot, err := flf.ReadAt(flBuf[:frames*8], int64(pfn*8))
				if err != nil && !errors.Is(err, io.EOF) {
					return nil, fmt.Errorf("kpageflags at frame %d: %w", pfn, err)
				}
				fframes := uint64(fgot / 8)
				for i := uint64(0); i < frames; i++ {
					ino := binary.NativeEndian.Uint64(cgBuf[i*8:])
					if ino == 0 {
						continue
					}
					var fl uint64
					if i < fframes {
						fl = binary.NativeEndian.Uint64(flBuf[i*8:])
					}
					if fl&(1<<kpfBuddy) != 0 {
						continue // freed since the cgroup read
					}
					if ino != last || lastC == nil {
						c := res.ByInode[ino]
						if c == nil {
							c = &Counts{}
							res.ByInode[ino] = c
						}
						last, lastC = ino, c
					}
					lastC.addFlags(fl)
				}
			}
			pfn += frames
			if frames < n {
				break
			}
		}
	}
	res.RAMBytes = res.Frames * int64(ps)
	res.Duration = time.Since(start)
	return res, nil
}
