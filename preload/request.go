package preload

// The requesting side of the library's malloc_info protocol (README.md,
// "Requests"), and a reader of its JSON lines.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Event is one JSON line of the stats file. Which fields are set depends
// on Event: "start", "trim", "summary", "info" or "error".
type Event struct {
	Event      string     `json:"event"`
	Time       time.Time  `json:"time"`
	PID        int        `json:"pid"`
	PPID       int        `json:"ppid,omitempty"`
	Glibc      string     `json:"glibc,omitempty"`
	Trigger    string     `json:"trigger,omitempty"` // interval, freed or request
	Request    string     `json:"request,omitempty"` // the id of the request answered
	ElapsedMs  float64    `json:"elapsedMs,omitempty"`
	RSS        RSS        `json:"rss"`
	Mallinfo2  *Mallinfo2 `json:"mallinfo2,omitempty"`
	Arenas     int        `json:"arenas,omitempty"`
	FreedBytes uint64     `json:"freedBytes,omitempty"`
	// Trims and ReleasedBytes count the process' trims so far (summary, info).
	Trims          uint64  `json:"trims,omitempty"`
	ReleasedBytes  uint64  `json:"releasedBytes,omitempty"`
	FreedSinceTrim uint64  `json:"freedSinceTrim,omitempty"`
	XML            string  `json:"xml,omitempty"`
	StatsMs        float64 `json:"statsMs,omitempty"`
	Error          string  `json:"error,omitempty"`
	Config         *Config `json:"config,omitempty"`
}

// RSS is the resident set size in bytes: Before/After/Diff (= Before -
// After) around a trim, Current elsewhere. Measured is true when Before and
// After were both numbers (the library writes null for a failed read).
type RSS struct {
	Before, After, Diff int64
	Current             int64
	Measured            bool `json:"-"`
}

// UnmarshalJSON accepts a number (current RSS) or {"before","after","diff"}.
func (r *RSS) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var v struct{ Before, After, Diff *int64 }
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*r = RSS{Measured: v.Before != nil && v.After != nil}
		for _, f := range []struct{ dst, src *int64 }{{&r.Before, v.Before}, {&r.After, v.After}, {&r.Diff, v.Diff}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &r.Current)
}

// Mallinfo2 is glibc's mallinfo2().
type Mallinfo2 struct {
	Arena    uint64 `json:"arena"`
	Ordblks  uint64 `json:"ordblks"`
	Smblks   uint64 `json:"smblks"`
	Hblks    uint64 `json:"hblks"`
	Hblkhd   uint64 `json:"hblkhd"`
	Fsmblks  uint64 `json:"fsmblks"`
	Uordblks uint64 `json:"uordblks"`
	Fordblks uint64 `json:"fordblks"`
	Keepcost uint64 `json:"keepcost"`
}

// Config is the library's configuration, in "start" lines.
type Config struct {
	TrimIntervalMs uint64 `json:"trimIntervalMs"`
	TrimFreedBytes uint64 `json:"trimFreedBytes"`
	// TrimFreedAskedBytes is the MEMDOCTOR_TRIM_FREED given, when it was
	// below the library's minimum (4 MiB) and TrimFreedBytes was raised.
	TrimFreedAskedBytes uint64 `json:"trimFreedAskedBytes,omitempty"`
	StatsIntervalMs     uint64 `json:"statsIntervalMs"`
	RequestPollMs       uint64 `json:"requestPollMs"`
}

// ReadEvents decodes a stats file. A last line without its newline (being
// written) is ignored; any other bad line is an error naming its number.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return out, fmt.Errorf("stats line %d: %w", n, err)
		}
		out = append(out, e)
	}
}

// Line is one stats line with what Event's zero values cannot tell:
// whether the line holds a pid, an elapsedMs (a trim of "0.000" ms was
// measured; null or no field was not) and an arena count (null when
// malloc_info failed).
type Line struct {
	Event
	HasPID, HasElapsedMs, HasArenas bool
}

// DecodeLine decodes one line of a stats file.
func DecodeLine(b []byte) (Line, error) {
	var l Line
	// The outer fields take the keys from the embedded Event (a shallower
	// field wins), so one pass decodes the line and sees what it holds.
	v := struct {
		*Event
		PID       *int     `json:"pid"`
		ElapsedMs *float64 `json:"elapsedMs"`
		Arenas    *int     `json:"arenas"`
	}{Event: &l.Event}
	if err := json.Unmarshal(b, &v); err != nil {
		return Line{}, err
	}
	if v.PID != nil {
		l.PID, l.HasPID = *v.PID, true
	}
	if v.ElapsedMs != nil {
		l.ElapsedMs, l.HasElapsedMs = *v.ElapsedMs, true
	}
	if v.Arenas != nil {
		l.Arenas, l.HasArenas = *v.Arenas, true
	}
	return l, nil
}

// Newest returns the newest allocator numbers in tail, the end of a stats
// file, for the process that sees itself as pid: summary is the newest
// line with mallinfo2, trim the newest of those that is a trim with its
// elapsedMs (nil when none). A line of another pid (a forked child
// writing to the same file) is not the process'; a line without a pid
// is. Lines that do not start with "{" (the first line of a tail may be
// cut) or do not decode are skipped.
func Newest(tail []byte, pid int) (summary, trim *Line) {
	for _, b := range bytes.Split(tail, []byte{'\n'}) {
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		l, err := DecodeLine(b)
		if err != nil || l.Mallinfo2 == nil {
			continue
		}
		if l.HasPID && l.PID != pid {
			continue
		}
		summary = &l
		if l.Event.Event == "trim" && l.HasElapsedMs {
			trim = &l
		}
	}
	return summary, trim
}

// Response is the answer to a request.
type Response struct {
	Event Event  // the stats line written for the request ("info" or "trim")
	XML   []byte // malloc_info(0, ...) of the process, taken before any trim
}

// Cred is a user to act as.
type Cred struct {
	UID, GID uint32
	Groups   []uint32
}

// Target says which process is asked and how its files are reached.
type Target struct {
	// PID, when > 0, is the process: StatsPath is resolved in its root
	// (absolute) or working directory (relative). 0: StatsPath is a
	// path of memdoctor's own view.
	PID int
	// OwnPID is the pid the process sees as its own (the answer's "pid");
	// 0 = not checked.
	OwnPID int
	// StatsPath is MEMDOCTOR_STATS as the process sees it, expanded.
	StatsPath string
	// Cred is the user the file work is done as (the process' fs uid,
	// fs gid and groups); nil = memdoctor's own.
	Cred *Cred
	// Owners are the uids whose stats file and XML are read; empty = any.
	// The stats file may also belong to root (a service that opened it
	// before dropping privileges).
	Owners []uint32
	// SkipXML: do not read the malloc_info dump (a trim needs only its line).
	SkipXML bool
	// Poll is the interval between looks at the request file (default 20 ms).
	Poll time.Duration
}

// Errors of Ask, to be classified with errors.Is.
var (
	// ErrPending: PATH.request exists (another request, or a file put there).
	ErrPending = errors.New("a request is pending")
	// ErrUnsafe: a file or answer was refused (wrong type, owner, size,
	// a symlink, an answer naming another file).
	ErrUnsafe = errors.New("refused")
)

// MaxXML bounds the malloc_info dump read; answerTail is how much of the
// end of the stats file is searched for the answer.
const (
	MaxXML     = 256 << 20
	answerTail = 1 << 20
)

// ErrNoAnswer is returned when the request file was not taken in time.
var ErrNoAnswer = errors.New("no answer")

// Request asks the process that writes statsPath (MEMDOCTOR_STATS, with %p
// already expanded, in memdoctor's own view) for its malloc_info, as
// memdoctor's own user. Action "info" (or "") only reads; "trim" also calls
// malloc_trim(0) and the event is the trim's. It returns when the library
// removed the request file, or with ErrNoAnswer when ctx ends first (the
// request is then withdrawn). For another user's process use Ask with its
// PID and credentials: memdoctor's internal/malloc does.
func Request(ctx context.Context, statsPath, action string) (*Response, error) {
	return Ask(ctx, Target{StatsPath: statsPath}, action)
}

// findAnswer returns the line of data (the end of a stats file) that
// answers request id: the last one naming it.
func findAnswer(data []byte, id string) (*Event, error) {
	needle := []byte(`"request":"` + id + `"`)
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if !bytes.Contains(lines[i], needle) {
			continue
		}
		var e Event
		if err := json.Unmarshal(lines[i], &e); err != nil {
			return nil, fmt.Errorf("%w: the answer to %s: %w", ErrUnsafe, id, err)
		}
		return &e, nil
	}
	return nil, fmt.Errorf("no line answers request %s", id)
}

// CredOf returns the file owners and the user to act as for a process,
// from the Uid, Gid and Groups lines of its /proc/PID/status: the owners
// are its four uids, the user its fs uid and fs gid with its groups.
func CredOf(uidLine, gidLine, groupsLine string) (owners []uint32, c *Cred, err error) {
	ids := func(line string, n int) ([]uint32, error) {
		f := strings.Fields(line)
		if n > 0 && len(f) != n {
			return nil, fmt.Errorf("%q: want %d ids", line, n)
		}
		out := make([]uint32, 0, len(f))
		for _, s := range f {
			v, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			out = append(out, uint32(v))
		}
		return out, nil
	}
	uids, err := ids(uidLine, 4)
	if err != nil {
		return nil, nil, fmt.Errorf("the Uid line %w", err)
	}
	gids, err := ids(gidLine, 4)
	if err != nil {
		return nil, nil, fmt.Errorf("the Gid line %w", err)
	}
	groups, err := ids(groupsLine, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("the Groups line %w", err)
	}
	return uids, &Cred{UID: uids[3], GID: gids[3], Groups: groups}, nil
}
