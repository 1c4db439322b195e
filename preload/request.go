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
	"os"
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
// After) around a trim, Current elsewhere.
type RSS struct {
	Before, After, Diff int64
	Current             int64
}

// UnmarshalJSON accepts a number (current RSS) or {"before","after","diff"}.
func (r *RSS) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var v struct{ Before, After, Diff int64 }
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		r.Before, r.After, r.Diff = v.Before, v.After, v.Diff
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
	TrimIntervalMs  uint64 `json:"trimIntervalMs"`
	TrimFreedBytes  uint64 `json:"trimFreedBytes"`
	StatsIntervalMs uint64 `json:"statsIntervalMs"`
	RequestPollMs   uint64 `json:"requestPollMs"`
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

// Response is the answer to a request.
type Response struct {
	Event Event  // the stats line written for the request ("info" or "trim")
	XML   []byte // malloc_info(0, ...) of the process, taken before any trim
}

// ErrNoAnswer is returned when the request file was not taken in time.
var ErrNoAnswer = errors.New("no answer")

// Request asks the process that writes statsPath (MEMDOCTOR_STATS, with %p
// already expanded) for its malloc_info. Action "info" (or "") only reads;
// "trim" also calls malloc_trim(0) and the event is the trim's. It returns
// when the library removed the request file, or with ErrNoAnswer when ctx
// ends first (the request is then withdrawn).
func Request(ctx context.Context, statsPath, action string) (*Response, error) {
	if action == "" {
		action = "info"
	}
	if action != "info" && action != "trim" {
		return nil, fmt.Errorf("request %q: want info or trim", action)
	}
	req := statsPath + ".request"
	if _, err := os.Lstat(req); err == nil {
		return nil, fmt.Errorf("%s exists: a request is pending, or no process with the library writes %s", req, statsPath)
	}
	id := fmt.Sprintf("md%d-%d", os.Getpid(), time.Now().UnixNano())
	tmp := req + ".tmp-" + id
	if err := os.WriteFile(tmp, []byte(action+" "+id+"\n"), 0o644); err != nil {
		return nil, err
	}
	// Renamed into place so the library never reads a half-written request.
	if err := os.Rename(tmp, req); err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Lstat(req); errors.Is(err, os.ErrNotExist) {
			break
		}
		select {
		case <-ctx.Done():
			if b, err := os.ReadFile(req); err == nil && strings.Contains(string(b), id) {
				_ = os.Remove(req)
			}
			return nil, fmt.Errorf("%w from the process writing %s (%w): is it running with "+
				"LD_PRELOAD=%s and MEMDOCTOR_STATS set to that path?", ErrNoAnswer, statsPath, ctx.Err(), LibName)
		case <-tick.C:
		}
	}
	ev, err := findRequest(statsPath, id)
	if err != nil {
		return nil, err
	}
	if ev.Event == "error" {
		return nil, fmt.Errorf("request %s: %s", id, ev.Error)
	}
	xml := ev.XML
	if xml == "" {
		xml = statsPath + ".malloc_info.xml"
	}
	b, err := os.ReadFile(xml)
	if err != nil {
		return nil, err
	}
	return &Response{Event: *ev, XML: b}, nil
}

// findRequest returns the stats line answering request id, reading only the
// last MiB of the file (the answer was just written).
func findRequest(statsPath, id string) (*Event, error) {
	f, err := os.Open(statsPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const tail = 1 << 20
	off := st.Size() - tail
	if off < 0 {
		off = 0
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, err
	}
	if off > 0 { // drop the partial first line
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	needle := []byte(`"request":"` + id + `"`)
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if !bytes.Contains(lines[i], needle) {
			continue
		}
		var e Event
		if err := json.Unmarshal(lines[i], &e); err != nil {
			return nil, fmt.Errorf("%s: answer to %s: %w", statsPath, id, err)
		}
		return &e, nil
	}
	return nil, fmt.Errorf("%s: no line answers request %s", statsPath, id)
}
