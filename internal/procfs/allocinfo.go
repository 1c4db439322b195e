package procfs

// /proc/allocinfo (lib/alloc_tag.c; kernel 6.10+ built with
// CONFIG_MEM_ALLOC_PROFILING, counting while vm.mem_profiling is on): the
// kernel's live allocations by the line of code that made them. A header
// names the format version, then one line per call site:
//
//	allocinfo - version: 1.0
//	#     <size>  <calls> <tag info>
//	     4194304     1024 fs/dcache.c:1660 func:__d_alloc
//	       65536       16 fs/xfs/xfs_icache.c:80 [xfs] func:xfs_inode_alloc
//
// size is the bytes allocated there and not freed ("%12lli": signed),
// calls the allocations live; the tag is file:line, the module in brackets
// when the code is in one, and func:NAME. Version 2.0 (a later kernel) appends
// " accurate:no" to a site whose counters missed allocations. The tag's
// words are read as key:value after the location, so a later key parses.

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// AllocSite is one allocation call site.
type AllocSite struct {
	Bytes int64
	Calls int64
	// File and Line are where the allocation is made; Module the module
	// ("" for the kernel proper); Func the function.
	File   string
	Line   int
	Module string
	Func   string
	// Inaccurate: the kernel says the counters missed allocations.
	Inaccurate bool
}

// Site names the call site: "fs/dcache.c:1660".
func (s AllocSite) Site() string { return s.File + ":" + strconv.Itoa(s.Line) }

// Allocinfo reads proc/allocinfo (absent before 6.10 or without
// CONFIG_MEM_ALLOC_PROFILING; root only).
func (f FS) Allocinfo() (version string, sites []AllocSite, err error) {
	data, err := f.ReadFile("proc/allocinfo")
	if err != nil {
		return "", nil, err
	}
	return ParseAllocinfo(data)
}

// ErrAllocinfoVersion is a file of a major version this parser does not
// know (the line layout may differ).
var ErrAllocinfoVersion = errors.New("allocinfo: unknown format version")

// ParseAllocinfo parses /proc/allocinfo. A line it cannot read is skipped;
// a file without the version line is read as version 1.0 (as the 6.10
// release candidates printed it).
func ParseAllocinfo(data []byte) (version string, sites []AllocSite, err error) {
	version = "1.0"
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		if v, ok := strings.CutPrefix(s, "allocinfo - version:"); ok {
			version = strings.TrimSpace(v)
			if major, _, _ := strings.Cut(version, "."); major != "1" && major != "2" {
				return version, nil, ErrAllocinfoVersion
			}
			continue
		}
		if site, ok := parseAllocLine(s); ok {
			sites = append(sites, site)
		}
	}
	return version, sites, nil
}

func parseAllocLine(s string) (AllocSite, bool) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return AllocSite{}, false
	}
	var a AllocSite
	var err error
	if a.Bytes, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return a, false
	}
	if a.Calls, err = strconv.ParseInt(f[1], 10, 64); err != nil || a.Calls < 0 {
		return a, false
	}
	loc := f[2]
	i := strings.LastIndexByte(loc, ':')
	if i <= 0 {
		return a, false
	}
	if a.Line, err = strconv.Atoi(loc[i+1:]); err != nil || a.Line < 0 {
		return a, false
	}
	a.File = loc[:i]
	for _, w := range f[3:] {
		switch {
		case len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' && a.Module == "" && a.Func == "":
			a.Module = w[1 : len(w)-1]
		case strings.HasPrefix(w, "func:"):
			a.Func = w[len("func:"):]
		case w == "accurate:no":
			a.Inaccurate = true
		}
	}
	return a, a.Func != ""
}
