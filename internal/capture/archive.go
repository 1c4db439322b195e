package capture

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/memdoctor/memdoctor/internal/safeio"

	"github.com/memdoctor/memdoctor/internal/outfile"

	"golang.org/x/tools/txtar"
)

// Reserved archive names.
const (
	reservedDir = "memdoctor"
	errorsEntry = "memdoctor/errors"
	endEntry    = "memdoctor/end"
	quotedExt   = ".qtxt"
)

// Contents is the set of paths a capture holds. Paths are slash-separated
// and unrooted ("proc/meminfo"), valid for io/fs, at most 4096 bytes long,
// without leading blanks or control characters, and not below the reserved
// top-level directory "memdoctor".
type Contents struct {
	// Files maps a path to the exact bytes read.
	Files map[string][]byte
	// Dirs lists directories, without a trailing "/". Parents of files
	// need not be listed; listing them is harmless.
	Dirs []string
	// Failures maps a path to the kind of its failed read. A key ending in
	// "/" is a directory whose listing failed. A path must not be both in
	// Files or Dirs and in Failures.
	Failures map[string]FailureKind
}

// WriteOptions tunes Write. The zero value redacts.
type WriteOptions struct {
	// NoRedact keeps proc/PID/cmdline files whole. proc/PID/environ files
	// are dropped regardless.
	NoRedact bool
}

// Write writes c as a capture archive with prov as its header (see the
// package documentation for the format). prov.Redacted is set from opts;
// prov is otherwise written as given. The output is canonical: entries are
// sorted by name, and a directory gets an entry only when nothing below it
// has one (its existence is implied otherwise). Write fails, writing
// nothing, when a path is invalid or the paths do not form a tree (a path
// both a file and a directory, a file below a file); such an error matches
// ErrCorrupt. Contents returned by Recorder.Contents always form a tree.
func Write(w io.Writer, prov Provenance, c Contents, opts WriteOptions) error {
	prov.Redacted = !opts.NoRedact
	header, err := prov.MarshalText()
	if err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	t, err := c.tree(!opts.NoRedact)
	if err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	a := txtar.Archive{Comment: header}
	// Directories holding a replayed path need no entry of their own. A
	// not-exist failure is not replayed as a path, so it does not count.
	implied := map[string]bool{}
	for name, it := range t.items {
		if it.fail != NotExist {
			for p, ok := parent(name); ok && !implied[p]; p, ok = parent(p) {
				implied[p] = true
			}
		}
	}
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(t.items)) {
		it := t.items[name]
		switch {
		case it.fail != "":
			key := name
			if it.dir {
				key += "/"
			}
			errs = append(errs, quoteIfNeeded(key)+"\t"+string(it.fail)+"\n")
		case it.dir:
			if !implied[name] {
				a.Files = append(a.Files, txtar.File{Name: name + "/"})
			}
		default:
			a.Files = append(a.Files, encodeFile(name, it.data))
		}
	}
	slices.SortFunc(a.Files, func(x, y txtar.File) int { return strings.Compare(x.Name, y.Name) })
	if len(errs) > 0 {
		a.Files = append(a.Files, txtar.File{Name: errorsEntry, Data: []byte(strings.Join(errs, ""))})
	}
	a.Files = append(a.Files, txtar.File{Name: endEntry})
	if _, err := w.Write(txtar.Format(&a)); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	return nil
}

// WriteFile writes the archive to the named file through outfile: a new or
// regular file is replaced atomically by a file readable by its owner only
// (the capture may hold host details), synced first; a FIFO, terminal or
// /dev/null is written through; any other device is refused, never
// replaced. Nothing is left behind on error.
func WriteFile(name string, prov Provenance, c Contents, opts WriteOptions) error {
	return outfile.Write(name, 0o600, func(w io.Writer) error {
		return Write(w, prov, c, opts)
	})
}

// encodeFile returns the txtar entry holding data exactly: verbatim when
// possible, else quoted under name+".qtxt".
func encodeFile(name string, data []byte) txtar.File {
	plain := !strings.HasSuffix(name, quotedExt) &&
		name == strings.TrimRightFunc(name, unicode.IsSpace) && // txtar trims marker names
		(len(data) == 0 || data[len(data)-1] == '\n') &&
		!bytes.HasPrefix(data, []byte("-- ")) && !bytes.Contains(data, []byte("\n-- "))
	if plain {
		return txtar.File{Name: name, Data: data}
	}
	pieces := bytes.Split(data, []byte("\n"))
	n := len(data) + 2*len(pieces)
	out := make([]byte, 0, n)
	for _, p := range pieces {
		out = append(out, '>')
		out = append(out, p...)
		out = append(out, '\n')
	}
	return txtar.File{Name: name + quotedExt, Data: out}
}

// decodeQuoted reverses encodeFile's quoting. line is the archive line of
// the first content line, for errors.
func decodeQuoted(data []byte, line int) ([]byte, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, corrupt(line, "quoted entry is empty or does not end in a newline")
	}
	lines := bytes.Split(data[:len(data)-1], []byte("\n"))
	out := make([]byte, 0, len(data))
	for i, l := range lines {
		if len(l) == 0 || l[0] != '>' {
			return nil, corrupt(line+i, "quoted line does not start with '>'")
		}
		if i > 0 {
			out = append(out, '\n')
		}
		out = append(out, l[1:]...)
	}
	return out, nil
}

// isProcFile reports whether name is proc/PID/base or deeper
// (proc/PID/task/TID/base), not proc/base.
func isProcFile(name, base string) bool {
	parts := strings.Split(name, "/")
	return len(parts) >= 3 && parts[0] == "proc" && parts[len(parts)-1] == base
}

// redactCmdline keeps argv[0] of a cmdline, cut at the first blank, and
// terminates it with a NUL.
func redactCmdline(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if i := bytes.IndexAny(b, " \t\n"); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return []byte{}
	}
	return append(bytes.Clone(b), 0)
}

// parent returns the parent directory of a valid path, and false for a
// top-level one.
func parent(name string) (string, bool) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", false
	}
	return name[:i], true
}

// maxName is the longest path stored, Linux's PATH_MAX.
const maxName = 4096

// validName reports whether name can be stored in an archive.
func validName(name string) bool {
	if len(name) > maxName || !fs.ValidPath(name) || name == "." ||
		name != strings.TrimLeftFunc(name, unicode.IsSpace) ||
		name == reservedDir || strings.HasPrefix(name, reservedDir+"/") {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return false
		}
	}
	return true
}

// item is one path of a tree: a file, a directory or a failure.
type item struct {
	dir  bool        // a directory (or, with fail, a directory whose listing failed)
	fail FailureKind // "" unless the read failed
	data []byte      // file content
	line int         // archive line, for errors; 0 when writing
}

// tree is a set of paths that forms a tree: every ancestor of a path is a
// directory (possibly implied), never a file, a failed file or a path
// recorded as not existing.
type tree struct {
	items map[string]item
	below map[string]bool // paths with at least one item below them
}

// newTree returns an empty tree.
func newTree() *tree {
	return &tree{items: map[string]item{}, below: map[string]bool{}}
}

// canParent reports whether paths may exist below it.
func (it item) canParent() bool { return it.dir && it.fail != NotExist }

// conflict describes why name cannot be added, or returns "".
func (t *tree) conflict(name string, it item) string {
	if !validName(name) {
		return fmt.Sprintf("invalid path %q", name)
	}
	if old, ok := t.items[name]; ok {
		if old.dir && it.dir && old.fail == "" && it.fail == "" {
			return ""
		}
		return fmt.Sprintf("path %q is recorded twice (%s and %s)", name, old.what(), it.what())
	}
	// Once an ancestor has items below it, it and its own ancestors were
	// checked when they were added.
	for p, ok := parent(name); ok && !t.below[p]; p, ok = parent(p) {
		if a, ok := t.items[p]; ok && !a.canParent() {
			return fmt.Sprintf("path %q is below %q, which is a %s", name, p, a.whatNotDir())
		}
	}
	if !it.canParent() && t.below[name] {
		return fmt.Sprintf("path %q is a %s but has entries below it", name, it.whatNotDir())
	}
	return ""
}

// insert adds an item that does not conflict.
func (t *tree) insert(name string, it item) {
	if _, ok := t.items[name]; ok {
		return // a directory recorded twice
	}
	t.items[name] = it
	for p, ok := parent(name); ok && !t.below[p]; p, ok = parent(p) {
		t.below[p] = true
	}
}

// add inserts name, failing on a conflict with an earlier item.
func (t *tree) add(name string, it item) error {
	if c := t.conflict(name, it); c != "" {
		return corrupt(it.line, "%s", c)
	}
	t.insert(name, it)
	return nil
}

// tryAdd inserts name unless it conflicts, and reports whether it did.
func (t *tree) tryAdd(name string, it item) bool {
	if t.conflict(name, it) != "" {
		return false
	}
	t.insert(name, it)
	return true
}

// what describes an item for errors.
func (it item) what() string {
	switch {
	case it.fail != "" && it.dir:
		return "failed directory"
	case it.fail != "":
		return "failed file"
	case it.dir:
		return "directory"
	}
	return "file"
}

// whatNotDir describes an item that cannot be a parent.
func (it item) whatNotDir() string {
	if it.fail == NotExist {
		return "path recorded as not existing"
	}
	return it.what()
}

// tree validates c and returns its paths, with environ files dropped and,
// when redact, cmdline files cut to argv[0].
func (c Contents) tree(redact bool) (*tree, error) {
	t := newTree()
	for _, name := range slices.Sorted(maps.Keys(c.Files)) {
		if isProcFile(name, "environ") {
			continue
		}
		data := c.Files[name]
		if redact && isProcFile(name, "cmdline") {
			data = redactCmdline(data)
		}
		if err := t.add(name, item{data: data}); err != nil {
			return nil, err
		}
	}
	for _, name := range c.Dirs {
		if err := t.add(name, item{dir: true}); err != nil {
			return nil, err
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.Failures)) {
		kind := c.Failures[key]
		if !kind.valid() {
			return nil, fmt.Errorf("path %q: unknown failure kind %q", key, kind)
		}
		name, dir := strings.CutSuffix(key, "/")
		if !dir && isProcFile(name, "environ") {
			continue
		}
		if err := t.add(name, item{dir: dir, fail: kind}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Load reads a capture archive and returns its files as a read-only
// in-memory fs.FS (implementing fs.ReadFileFS, fs.ReadDirFS and fs.StatFS)
// with its provenance. Recorded failures are reproduced; see the package
// documentation. A malformed or truncated archive yields an error naming
// the line, matching ErrCorrupt (or ErrNotCapture for a bad first line).
func Load(r io.Reader) (fs.FS, Provenance, error) {
	data, err := safeio.ReadAll(r, safeio.Archive)
	if err != nil {
		return nil, Provenance{}, fmt.Errorf("load capture: %w", err)
	}
	fsys, prov, err := load(data)
	if err != nil {
		return nil, Provenance{}, fmt.Errorf("load capture: %w", err)
	}
	return fsys, prov, nil
}

// LoadFile is Load on the named file.
func LoadFile(name string) (fs.FS, Provenance, error) {
	data, err := safeio.ReadFile(name, safeio.Archive)
	if err != nil {
		return nil, Provenance{}, fmt.Errorf("load capture: %w", err)
	}
	fsys, prov, err := load(data)
	if err != nil {
		return nil, Provenance{}, fmt.Errorf("load capture %s: %w", name, err)
	}
	return fsys, prov, nil
}

// load is Load without the wrapping.
func load(data []byte) (fs.FS, Provenance, error) {
	comment, entries, lines := splitArchive(data)
	prov, err := parseHeader(comment)
	if err != nil {
		return nil, Provenance{}, err
	}
	if len(entries) == 0 || entries[len(entries)-1].name != endEntry {
		return nil, Provenance{}, corrupt(lines, "archive is truncated: it does not end with the %s trailer", endEntry)
	}
	if end := entries[len(entries)-1]; len(end.data) > 0 {
		return nil, Provenance{}, corrupt(end.line+1, "the %s trailer has content", endEntry)
	}
	entries = entries[:len(entries)-1]
	t := newTree()
	stored := map[string]bool{}
	for _, e := range entries {
		if e.name == endEntry {
			return nil, Provenance{}, corrupt(e.line, "the %s trailer is followed by more entries", endEntry)
		}
		if stored[e.name] {
			return nil, Provenance{}, corrupt(e.line, "duplicate entry %q", e.name)
		}
		stored[e.name] = true
		switch {
		case e.name == errorsEntry:
			err = parseErrors(t, e.data, e.line+1)
		case strings.HasPrefix(e.name, reservedDir+"/"):
			// Metadata of a later version: ignored.
		case strings.HasSuffix(e.name, "/"):
			if len(e.data) > 0 {
				err = corrupt(e.line+1, "directory entry %q has content", e.name)
				break
			}
			err = t.add(strings.TrimSuffix(e.name, "/"), item{dir: true, line: e.line})
		case strings.HasSuffix(e.name, quotedExt):
			var d []byte
			if d, err = decodeQuoted(e.data, e.line+1); err == nil {
				err = t.add(strings.TrimSuffix(e.name, quotedExt), item{data: d, line: e.line})
			}
		default:
			err = t.add(e.name, item{data: e.data, line: e.line})
		}
		if err != nil {
			return nil, Provenance{}, err
		}
	}
	return newReplayFS(t, prov.Time), prov, nil
}

// parseErrors adds the failures of a memdoctor/errors file to t. line is
// the line number of data's first line, in the archive or 1 in a file.
func parseErrors(t *tree, data []byte, line int) error {
	for i, l := range strings.Split(string(data), "\n") {
		n := line + i
		l = strings.TrimSuffix(l, "\r")
		if l == "" {
			continue
		}
		key, kind, ok := strings.Cut(l, "\t")
		if !ok {
			return corrupt(n, "malformed failure line %.60q, want \"path<TAB>kind\"", l)
		}
		if strings.HasPrefix(key, `"`) {
			u, err := strconv.Unquote(key)
			if err != nil {
				return corrupt(n, "bad quoted path %.60s", key)
			}
			key = u
		}
		if !FailureKind(kind).valid() {
			return corrupt(n, "unknown failure kind %.30q, want %s, %s or %s", kind, NotExist, Permission, Other)
		}
		name, dir := strings.CutSuffix(key, "/")
		if err := t.add(name, item{dir: dir, fail: FailureKind(kind), line: n}); err != nil {
			return err
		}
	}
	return nil
}

// rawEntry is one txtar entry with the line of its marker.
type rawEntry struct {
	name string
	data []byte
	line int
}

// splitArchive splits data exactly as txtar.Parse does, also returning the
// marker line of each entry and the number of lines of data.
func splitArchive(data []byte) (comment []byte, entries []rawEntry, lines int) {
	start, cur := 0, -1
	set := func(seg []byte) {
		if cur < 0 {
			comment = seg
		} else {
			entries[cur].data = seg
		}
	}
	line := 0
	for pos := 0; pos < len(data); {
		line++
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		if name := markerName(data[pos:next]); name != "" {
			set(data[start:pos])
			entries = append(entries, rawEntry{name: name, line: line})
			cur = len(entries) - 1
			start = next
		}
		pos = next
	}
	last := data[start:]
	if len(last) > 0 && last[len(last)-1] != '\n' {
		last = append(bytes.Clone(last), '\n')
	}
	set(last)
	return comment, entries, max(line, 1)
}

// markerName returns the file name if line (with its newline, if any) is a
// txtar file marker, else "". It follows txtar's isMarker exactly.
func markerName(line []byte) string {
	if !bytes.HasPrefix(line, []byte("-- ")) {
		return ""
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
		if line[i-1] == '\r' {
			line = line[:i-1]
		}
	}
	if !bytes.HasSuffix(line, []byte(" --")) || len(line) < 6 {
		return ""
	}
	return strings.TrimSpace(string(line[3 : len(line)-3]))
}
