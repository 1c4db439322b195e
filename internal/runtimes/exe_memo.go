package runtimes

import (
	"io"
	"io/fs"
	"sync"

	"github.com/memdoctor/memdoctor/internal/elfsym"
)

// ExeMemo keeps the Go version found in executables from one reading to
// the next, for the recorder, which detects the runtimes of the same
// processes every interval: the build information of a Go executable is
// found by scanning its data (a fifth of a sample's CPU in a profile of
// the recorder, for a version that cannot change while the file does
// not). An executable is known by its device, inode, size and times of
// modification and change (exeID), read from the file opened as
// /proc/PID/exe, so a binary rewritten in place or replaced is read anew.
// Entries no process asked for in the last reading are forgotten, and
// there are at most maxExeMemo of them.
type ExeMemo struct {
	mu      sync.Mutex
	m       map[exeID]exeEntry
	reading uint64 // the current reading; entries carry the last one that used them
	parses  int    // build information read (not answered from the memo)
}

type exeEntry struct {
	version string // "" for an executable without Go build information
	used    uint64
}

// maxExeMemo bounds the memo: a host with more distinct executables among
// the recorded processes has the rest read every time.
const maxExeMemo = 4096

// begin starts a reading.
func (m *ExeMemo) begin() {
	m.mu.Lock()
	m.reading++
	m.mu.Unlock()
}

// end forgets the executables the reading did not ask for (their
// processes exited or left the top).
func (m *ExeMemo) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.m {
		if e.used != m.reading {
			delete(m.m, k)
		}
	}
}

// Len is how many executables the memo holds.
func (m *ExeMemo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Parses is how many times the memo read build information: the
// executables it could not answer for.
func (m *ExeMemo) Parses() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parses
}

// goVersion returns the Go version of the executable f (read through ra),
// from the memo when that file was read before.
func (m *ExeMemo) goVersion(f fs.File, ra io.ReaderAt) (string, bool) {
	id, ok := idOfFile(f)
	if ok {
		m.mu.Lock()
		e, hit := m.m[id]
		if hit {
			e.used = m.reading
			m.m[id] = e
		}
		m.mu.Unlock()
		if hit {
			return e.version, e.version != ""
		}
	}
	v, _ := elfsym.GoVersion(ra, nil)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parses++
	if ok {
		if m.m == nil {
			m.m = map[exeID]exeEntry{}
		}
		if len(m.m) < maxExeMemo {
			m.m[id] = exeEntry{version: v, used: m.reading}
		}
	}
	return v, v != ""
}
