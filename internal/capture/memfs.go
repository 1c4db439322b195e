package capture

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// Errors of a replay for a path of the wrong type.
var (
	errIsDir  = errors.New("is a directory")
	errNotDir = errors.New("not a directory")
)

// memNode is a file or directory of a memFS.
type memNode struct {
	name  string // base name; "." for the root
	mode  fs.FileMode
	data  []byte
	kids  []*memNode // sorted by name; directories only
	mtime time.Time
}

// memFS is a read-only in-memory tree.
type memFS struct {
	nodes map[string]*memNode // by full path; "." is the root
}

// newReplayFS returns the replay of a validated tree: a memFS with the
// files, directories and placeholders of failed paths, behind a failFS
// that reproduces the failures.
func newReplayFS(t *tree, mtime time.Time) fs.FS {
	m := &memFS{nodes: map[string]*memNode{".": {name: ".", mode: fs.ModeDir | 0o555, mtime: mtime}}}
	fails := map[string]item{}
	var dir func(name string) *memNode
	dir = func(name string) *memNode {
		if n, ok := m.nodes[name]; ok {
			return n
		}
		n := &memNode{name: base(name), mode: fs.ModeDir | 0o555, mtime: mtime}
		m.nodes[name] = n
		p := dir(dirname(name))
		p.kids = append(p.kids, n)
		return n
	}
	for _, name := range sortedKeys(t.items) {
		it := t.items[name]
		if it.fail != "" {
			fails[name] = item{dir: it.dir, fail: it.fail}
		}
		switch {
		case it.fail == NotExist:
			continue
		case it.dir:
			n := dir(name)
			if it.fail == Permission {
				n.mode = fs.ModeDir
			}
		default:
			n := &memNode{name: base(name), mode: 0o444, data: it.data, mtime: mtime}
			if it.fail == Permission {
				n.mode = 0
			}
			m.nodes[name] = n
			p := dir(dirname(name))
			p.kids = append(p.kids, n)
		}
	}
	for _, n := range m.nodes {
		slices.SortFunc(n.kids, func(a, b *memNode) int { return strings.Compare(a.name, b.name) })
	}
	return &failFS{fsys: m, fails: fails}
}

// dirname returns the parent of a valid path, "." for a top-level one.
func dirname(name string) string {
	if p, ok := parent(name); ok {
		return p
	}
	return "."
}

// base returns the last element of a valid path.
func base(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// lookup returns the node of a valid path.
func (m *memFS) lookup(op, name string) (*memNode, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n, ok := m.nodes[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

// Open opens a file or directory.
func (m *memFS) Open(name string) (fs.File, error) {
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.mode.IsDir() {
		return &memDir{n: n, path: name}, nil
	}
	return &memFile{n: n, path: name, r: bytes.NewReader(n.data)}, nil
}

// ReadFile returns a copy of a file's content.
func (m *memFS) ReadFile(name string) ([]byte, error) {
	n, err := m.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if n.mode.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	return bytes.Clone(n.data), nil
}

// ReadDir lists a directory, sorted by name.
func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := m.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.mode.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	out := make([]fs.DirEntry, len(n.kids))
	for i, k := range n.kids {
		out[i] = memInfo{k}
	}
	return out, nil
}

// Stat describes a file or directory.
func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return memInfo{n}, nil
}

// memInfo is both the fs.FileInfo and the fs.DirEntry of a node.
type memInfo struct{ n *memNode }

func (i memInfo) Name() string               { return i.n.name }
func (i memInfo) Size() int64                { return int64(len(i.n.data)) }
func (i memInfo) Mode() fs.FileMode          { return i.n.mode }
func (i memInfo) ModTime() time.Time         { return i.n.mtime }
func (i memInfo) IsDir() bool                { return i.n.mode.IsDir() }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.n.mode.Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i memInfo) String() string             { return fs.FormatFileInfo(i) }

// memFile is an open regular file.
type memFile struct {
	n      *memNode
	path   string
	r      *bytes.Reader
	closed bool
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f.n}, nil }

func (f *memFile) Read(b []byte) (int, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	return f.r.Read(b)
}

func (f *memFile) Seek(off int64, whence int) (int64, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "seek", Path: f.path, Err: fs.ErrClosed}
	}
	return f.r.Seek(off, whence)
}

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	return f.r.ReadAt(b, off)
}

func (f *memFile) Close() error {
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

// memDir is an open directory.
type memDir struct {
	n      *memNode
	path   string
	off    int
	closed bool
}

func (d *memDir) Stat() (fs.FileInfo, error) { return memInfo{d.n}, nil }

func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errIsDir}
}

func (d *memDir) Close() error {
	if d.closed {
		return &fs.PathError{Op: "close", Path: d.path, Err: fs.ErrClosed}
	}
	d.closed = true
	return nil
}

func (d *memDir) ReadDir(count int) ([]fs.DirEntry, error) {
	if d.closed {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: fs.ErrClosed}
	}
	rest := d.n.kids[d.off:]
	if count > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if count > 0 && count < len(rest) {
		rest = rest[:count]
	}
	d.off += len(rest)
	out := make([]fs.DirEntry, len(rest))
	for i, k := range rest {
		out[i] = memInfo{k}
	}
	return out, nil
}

// failFS reproduces recorded failures over another fs.FS and, with hide,
// hides the reserved top-level directory "memdoctor".
type failFS struct {
	fsys  fs.FS
	fails map[string]item // failed paths (fail and dir set), without a trailing "/"
	hide  bool
}

// check returns the replayed error of a path, or nil. For stat, only a
// recorded not-exist fails: a path that could not be read still exists.
func (f *failFS) check(op, name string) error {
	if f.hide && (name == reservedDir || strings.HasPrefix(name, reservedDir+"/")) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	it, ok := f.fails[name]
	if !ok || (op == "stat" && it.fail != NotExist) {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: it.fail.Err()}
}

// Open opens a file, failing as recorded.
func (f *failFS) Open(name string) (fs.File, error) {
	if err := f.check("open", name); err != nil {
		return nil, err
	}
	file, err := f.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if f.hide && name == "." {
		if d, ok := file.(fs.ReadDirFile); ok {
			return hidingDir{d}, nil
		}
	}
	return file, nil
}

// ReadFile reads a file, failing as recorded.
func (f *failFS) ReadFile(name string) ([]byte, error) {
	if err := f.check("read", name); err != nil {
		return nil, err
	}
	return fs.ReadFile(f.fsys, name)
}

// ReadDir lists a directory, failing as recorded.
func (f *failFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.check("readdir", name); err != nil {
		return nil, err
	}
	es, err := fs.ReadDir(f.fsys, name)
	if f.hide && name == "." {
		es = slices.DeleteFunc(es, func(e fs.DirEntry) bool { return e.Name() == reservedDir })
	}
	return es, err
}

// Stat describes a file; only a recorded not-exist fails.
func (f *failFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.check("stat", name); err != nil {
		return nil, err
	}
	return fs.Stat(f.fsys, name)
}

// hidingDir is the root directory of a failFS with hide: it does not list
// "memdoctor".
type hidingDir struct{ fs.ReadDirFile }

func (d hidingDir) ReadDir(count int) ([]fs.DirEntry, error) {
	for {
		es, err := d.ReadDirFile.ReadDir(count)
		n := len(es)
		es = slices.DeleteFunc(es, func(e fs.DirEntry) bool { return e.Name() == reservedDir })
		if count <= 0 || len(es) > 0 || n == 0 || err != nil {
			return es, err
		}
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
