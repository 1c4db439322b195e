package collect

// The allocator's own view of a process, without pausing it: processes
// running memdoctor's preload library (libmemdoctor_preload.so in their
// maps) with MEMDOCTOR_STATS=PATH append JSON lines with mallinfo2() to
// PATH; the newest line gives the in-use heap, the free heap and the
// arenas, and the newest trim line how long a trim takes.
//
// Privacy: of the process' environment only MEMDOCTOR_STATS is looked for;
// nothing else of it is kept or shown.

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

const preloadLib = "libmemdoctor_preload.so"

// statsTail is how much of the end of a stats file is read.
const statsTail = 64 << 10

type mallinfo2 struct {
	Arena    float64 `json:"arena"`
	Uordblks float64 `json:"uordblks"`
	Fordblks float64 `json:"fordblks"`
	Hblkhd   float64 `json:"hblkhd"`
}

type statsLine struct {
	Event     string     `json:"event"`
	ElapsedMs *float64   `json:"elapsedMs"`
	Mallinfo2 *mallinfo2 `json:"mallinfo2"`
	Arenas    *float64   `json:"arenas"`
}

func hasPreload(maps []procfs.Mapping) bool {
	for _, m := range maps {
		if strings.HasSuffix(m.Path, preloadLib) {
			return true
		}
	}
	return false
}

// statsPath finds MEMDOCTOR_STATS in a process' environment.
func statsPath(c *ctx, pid int) string {
	b, err := c.fs.ReadFile("proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("MEMDOCTOR_STATS=")); ok {
			return string(v)
		}
	}
	return ""
}

// tail reads at most n bytes from the end of a file.
func tail(c *ctx, name string, n int64) ([]byte, error) {
	f, err := c.fs.Sys().Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	if s, ok := f.(io.Seeker); ok {
		if st, err := f.Stat(); err == nil && st.Size() > n {
			if _, err := s.Seek(st.Size()-n, io.SeekStart); err != nil {
				return nil, err
			}
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// collectAllocator emits memdoctor_malloc_* for one process from its
// preload stats file, when it has one.
func collectAllocator(c *ctx, pid int, maps []procfs.Mapping, labels []string) {
	if !hasPreload(maps) {
		return
	}
	path := statsPath(c, pid)
	if path == "" || !strings.HasPrefix(path, "/") {
		return
	}
	name := "proc/" + strconv.Itoa(pid) + "/root" + path
	data, err := tail(c, name, statsTail)
	if err != nil {
		if !isGone(err) {
			c.note(name, "preload stats unreadable: "+err.Error(), "the allocator's view of pid "+strconv.Itoa(pid), "")
		}
		return
	}
	var last, lastTrim *statsLine
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if len(l) == 0 || l[0] != '{' {
			continue // the first line of a tail may be cut
		}
		var s statsLine
		if json.Unmarshal(l, &s) != nil || s.Mallinfo2 == nil {
			continue
		}
		last = &s
		if s.Event == "trim" && s.ElapsedMs != nil {
			lastTrim = &s
		}
	}
	if last == nil {
		return
	}
	m := last.Mallinfo2
	c.add("memdoctor_malloc_system_bytes", m.Arena+m.Hblkhd, labels...)
	c.add("memdoctor_malloc_in_use_bytes", m.Uordblks+m.Hblkhd, labels...)
	c.add("memdoctor_malloc_free_bytes", m.Fordblks, labels...)
	if last.Arenas != nil {
		c.add("memdoctor_malloc_arenas", *last.Arenas, labels...)
	}
	if lastTrim != nil {
		c.add("memdoctor_malloc_trim_seconds", *lastTrim.ElapsedMs/1000, labels...)
	}
}
