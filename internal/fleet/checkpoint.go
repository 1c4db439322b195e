package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// A Checkpoint keeps a scan's judged instances in a file as they are
// judged, so that a scan stopped part way (interrupted, killed, the
// machine gone) can go on where it was: a scan given the same file skips
// the instances it holds and takes their findings from it.
//
// The file is JSON lines: a first line saying which scan it is of (the
// server, --match, the range, the step and --all: CheckpointScan), then
// one line per judged instance, appended and synced after each batch.
// A last line cut short (a crash while writing it) is dropped; anything
// else that does not read is an error. An instance whose fetch failed is
// not written: a resumed scan asks for it again.
type Checkpoint struct {
	path string
	f    *os.File
	mu   sync.Mutex
	done map[string]*checkpointLine
	// resumed counts the instances a scan took from the file, written
	// those it added.
	resumed, written int
}

// CheckpointScan is what makes two scans the same scan.
type CheckpointScan struct {
	Kind   string    `json:"kind"`
	Source string    `json:"source"`
	Match  string    `json:"match"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Step   float64   `json:"step_seconds"`
	All    bool      `json:"all"`
}

const checkpointKind = "memdoctor-fleet-checkpoint/1"

// checkpointLine is one judged instance.
type checkpointLine struct {
	Instance     string           `json:"instance"`
	Findings     []model.Finding  `json:"findings"`
	Notes        []sample.Note    `json:"notes,omitempty"`
	NotEvaluated []model.RuleSkip `json:"not_evaluated,omitempty"`
	Series       int              `json:"series_fetched,omitempty"`
}

// maxCheckpointLine bounds one line of the file (an instance's findings
// and notes are a few kilobytes).
const maxCheckpointLine = 16 << 20

// OpenCheckpoint opens (or creates) the checkpoint file path for the scan
// s. A file of another scan is refused, saying how they differ.
func OpenCheckpoint(path string, s CheckpointScan) (*Checkpoint, error) {
	s.Kind = checkpointKind
	s.From, s.To = s.From.UTC(), s.To.UTC()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	cp := &Checkpoint{path: path, f: f, done: map[string]*checkpointLine{}}
	keep, err := cp.read(s)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	// Drop what follows the last whole line (a line cut by a crash), then
	// append from there.
	if err := f.Truncate(keep); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if keep == 0 {
		b, _ := json.Marshal(s)
		if err := cp.write(append(b, '\n')); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return cp, nil
}

// read loads the file's instances after checking that its first line is
// the scan s; it returns the length of its whole lines.
func (cp *Checkpoint) read(s CheckpointScan) (int64, error) {
	r := bufio.NewReaderSize(cp.f, 64<<10)
	var off int64
	for n := 0; ; n++ {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			if len(line) > 0 && n > 0 {
				break // cut short: dropped
			}
			if len(line) > 0 {
				return 0, fmt.Errorf("checkpoint %s is not a scan's checkpoint (its first line is cut short): remove it to start afresh", cp.path)
			}
			break
		}
		if err != nil {
			return 0, fmt.Errorf("checkpoint %s: line %d: %w", cp.path, n+1, err)
		}
		if n == 0 {
			var got CheckpointScan
			if json.Unmarshal(line, &got) != nil || got.Kind != checkpointKind {
				return 0, fmt.Errorf("checkpoint %s is not a fleet scan's checkpoint: give another file, or remove it to start afresh", cp.path)
			}
			if d := scanDiff(got, s); d != "" {
				return 0, fmt.Errorf("checkpoint %s is of another scan (%s): run the same command as the scan that wrote it, or give another file (or remove this one) to start afresh", cp.path, d)
			}
		} else {
			var l checkpointLine
			if err := json.Unmarshal(line, &l); err != nil || l.Instance == "" {
				return 0, fmt.Errorf("checkpoint %s: line %d is not a judged instance: remove the file to start afresh", cp.path, n+1)
			}
			cp.done[l.Instance] = &l
		}
		off += int64(len(line)) + 1
	}
	return off, nil
}

// readLine reads one line without its newline; io.EOF with what was read
// when the file ends before one.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxCheckpointLine {
			return nil, fmt.Errorf("longer than %d bytes", maxCheckpointLine)
		}
		if err == nil {
			return buf[:len(buf)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// scanDiff says how the scan a checkpoint is of differs from s ("" when
// it does not), naming the flags.
func scanDiff(got, s CheckpointScan) string {
	var d []string
	if got.Source != s.Source {
		d = append(d, fmt.Sprintf("--prometheus %s, not %s", got.Source, s.Source))
	}
	if got.Match != s.Match {
		d = append(d, fmt.Sprintf("--match %q, not %q", got.Match, s.Match))
	}
	if !got.To.Equal(s.To) {
		d = append(d, fmt.Sprintf("--until %s, not %s", got.To.Format(time.RFC3339), s.To.Format(time.RFC3339)))
	}
	if got.To.Sub(got.From) != s.To.Sub(s.From) {
		d = append(d, fmt.Sprintf("--range %s, not %s", flagDur(got.To.Sub(got.From)), flagDur(s.To.Sub(s.From))))
	}
	if got.Step != s.Step {
		d = append(d, fmt.Sprintf("--step %s, not %s", flagDur(time.Duration(got.Step*float64(time.Second))), flagDur(time.Duration(s.Step*float64(time.Second)))))
	}
	if got.All != s.All {
		d = append(d, fmt.Sprintf("--all %v, not %v", got.All, s.All))
	}
	return strings.Join(d, "; ")
}

// flagDur writes d as --range and --step read it: 14d, 13d23h, 5m.
func flagDur(d time.Duration) string {
	out := ""
	if day := 24 * time.Hour; d >= day {
		out = fmt.Sprintf("%dd", d/day)
		d %= day
	}
	if d > 0 || out == "" {
		r := d.String()
		for _, z := range []string{"0s", "0m"} {
			if r != z && strings.HasSuffix(r, z) && len(r) > len(z) && r[len(r)-len(z)-1] >= 'a' {
				r = strings.TrimSuffix(r, z)
			}
		}
		out += r
	}
	return out
}

func (cp *Checkpoint) write(b []byte) error {
	if _, err := cp.f.Write(b); err != nil {
		return fmt.Errorf("checkpoint %s: %w", cp.path, err)
	}
	if err := cp.f.Sync(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", cp.path, err)
	}
	return nil
}

// restore fills in an instance judged before; false when it was not.
func (cp *Checkpoint) restore(in *Instance) bool {
	if cp == nil {
		return false
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	l := cp.done[in.Instance]
	if l == nil {
		return false
	}
	in.Findings, in.Notes, in.NotEvaluated, in.Series = l.Findings, l.Notes, l.NotEvaluated, l.Series
	if in.Findings == nil {
		in.Findings = []model.Finding{}
	}
	cp.resumed++
	return true
}

// add writes the instances of a batch judged without error, in one write.
func (cp *Checkpoint) add(batch []*Instance) error {
	if cp == nil {
		return nil
	}
	var buf bytes.Buffer
	for _, in := range batch {
		if in.Error != "" {
			continue
		}
		b, err := json.Marshal(checkpointLine{Instance: in.Instance, Findings: in.Findings, Notes: in.Notes,
			NotEvaluated: in.NotEvaluated, Series: in.Series})
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if buf.Len() == 0 {
		return nil
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if err := cp.write(buf.Bytes()); err != nil {
		return err
	}
	cp.written += bytes.Count(buf.Bytes(), []byte{'\n'})
	return nil
}

// Resumed is how many instances the scan took from the file.
func (cp *Checkpoint) Resumed() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.resumed
}

// Held is how many judged instances the file holds.
func (cp *Checkpoint) Held() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return len(cp.done) + cp.written
}

// Close closes the file.
func (cp *Checkpoint) Close() error { return cp.f.Close() }
