package capture

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
)

// DefaultMaxFileSize is the size above which a Recorder does not record a
// file: 4 MiB.
const DefaultMaxFileSize = 4 << 20

// RecordOptions tunes a Recorder. The zero value uses the defaults.
type RecordOptions struct {
	// Exclude reports whether a path must not be recorded. data is the
	// content of a successful file read, nil for a directory or a failure.
	// nil means DefaultExclude.
	Exclude func(name string, data []byte) bool

	// MaxFileSize is the largest file recorded, in bytes; 0 means
	// DefaultMaxFileSize and a negative value means no limit.
	MaxFileSize int
}

// DefaultExclude excludes shared libraries by name ("*.so", "*.so.*", such
// as libc.so.6) and any file that starts with the ELF magic.
func DefaultExclude(name string, data []byte) bool {
	base := path.Base(name)
	if strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.") {
		return true
	}
	return bytes.HasPrefix(data, []byte("\x7fELF"))
}

// Recorder is an fs.FS that reads through another fs.FS and records what
// was read, for [Write]. It implements fs.ReadFileFS, fs.ReadDirFS and
// fs.StatFS; every call returns exactly what the wrapped fs.FS returns. See
// the package documentation for what is recorded; in short, the first
// successful read of a path is kept, and a success replaces a failure. A
// Recorder is safe for concurrent use.
//
// Files returned by Open record their content when read to io.EOF; a file
// closed earlier records nothing. They do not implement io.Seeker or
// io.ReaderAt even when the wrapped files do.
type Recorder struct {
	fsys    fs.FS
	exclude func(string, []byte) bool
	max     int

	mu    sync.Mutex
	files map[string][]byte
	dirs  map[string]bool        // value: listed successfully
	fails map[string]FailureKind // key ends in "/" for a directory
}

// NewRecorder returns a Recorder reading through fsys.
func NewRecorder(fsys fs.FS, opts RecordOptions) *Recorder {
	r := &Recorder{
		fsys:    fsys,
		exclude: opts.Exclude,
		max:     opts.MaxFileSize,
		files:   map[string][]byte{},
		dirs:    map[string]bool{},
		fails:   map[string]FailureKind{},
	}
	if r.exclude == nil {
		r.exclude = DefaultExclude
	}
	if r.max == 0 {
		r.max = DefaultMaxFileSize
	}
	return r
}

// Open opens name in the wrapped fs.FS. A failure is recorded; a directory
// is recorded, and so are the subdirectories its ReadDir returns; a
// regular file is recorded when read to io.EOF.
func (r *Recorder) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		r.recordFail(name, err, false)
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		return f, nil
	}
	if info.IsDir() {
		r.recordDir(name, false)
		if d, ok := f.(fs.ReadDirFile); ok {
			return &recDir{ReadDirFile: d, r: r, name: name}, nil
		}
		return f, nil
	}
	return &recFile{File: f, r: r, name: name}, nil
}

// ReadFile reads name from the wrapped fs.FS and records the content or
// the failure.
func (r *Recorder) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		r.recordFail(name, err, false)
		return data, err
	}
	r.recordFile(name, data)
	return data, nil
}

// ReadDir lists name in the wrapped fs.FS and records the directory and its
// subdirectories (entries that are directories, and symlinks to
// directories outside proc), or the failure.
func (r *Recorder) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(r.fsys, name)
	if err != nil {
		r.recordFail(name, err, true)
		return es, err
	}
	r.recordDir(name, true)
	r.recordEntries(name, es)
	return es, nil
}

// Stat describes name in the wrapped fs.FS. A directory is recorded; a
// regular file not recorded yet is read and recorded, so that an existence
// check replays; a failure is recorded.
func (r *Recorder) Stat(name string) (fs.FileInfo, error) {
	info, err := fs.Stat(r.fsys, name)
	if err != nil {
		r.recordFail(name, err, false)
		return info, err
	}
	switch {
	case info.IsDir():
		r.recordDir(name, false)
	case info.Mode().IsRegular() && (r.max < 0 || info.Size() <= int64(r.max)) &&
		validName(name) && !r.exclude(name, nil):
		r.mu.Lock()
		_, done := r.files[name]
		r.mu.Unlock()
		if !done {
			_, _ = r.ReadFile(name) // recorded by ReadFile, either way
		}
	}
	return info, nil
}

// Contents returns a copy of what was recorded so far, made consistent: a
// success replaces a failure of the same path, a failure that cannot have
// entries below it (a file, or a path that did not exist) is dropped when
// something was read below it, and of a file and something below it (the
// tree changed while recorded) the file is kept.
func (r *Recorder) Contents() Contents {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := newTree()
	// Shallow paths first, so that of a file and a path below it the file
	// is kept.
	byDepth := func(names []string) []string {
		slices.SortStableFunc(names, func(a, b string) int {
			return strings.Count(a, "/") - strings.Count(b, "/")
		})
		return names
	}
	for _, name := range byDepth(slices.Sorted(maps.Keys(r.files))) {
		t.tryAdd(name, item{data: bytes.Clone(r.files[name])})
	}
	for _, name := range byDepth(slices.Sorted(maps.Keys(r.dirs))) {
		if k := r.fails[name+"/"]; k == Permission || k == Other {
			continue // the failed directory below stands for it
		}
		t.tryAdd(name, item{dir: true})
	}
	var fileFails []string
	for _, key := range byDepth(slices.Sorted(maps.Keys(r.fails))) {
		name, dir := strings.CutSuffix(key, "/")
		if !dir {
			fileFails = append(fileFails, name)
			continue
		}
		t.tryAdd(name, item{dir: true, fail: r.fails[key]})
	}
	for _, name := range fileFails {
		t.tryAdd(name, item{fail: r.fails[name]})
	}
	var c Contents
	for _, name := range sortedKeys(t.items) {
		it := t.items[name]
		switch {
		case it.fail != "":
			if c.Failures == nil {
				c.Failures = map[string]FailureKind{}
			}
			key := name
			if it.dir {
				key += "/"
			}
			c.Failures[key] = it.fail
		case it.dir:
			c.Dirs = append(c.Dirs, name)
		default:
			if c.Files == nil {
				c.Files = map[string][]byte{}
			}
			c.Files[name] = it.data
		}
	}
	return c
}

// recordFile records the content of a successful read, unless excluded or
// already recorded.
func (r *Recorder) recordFile(name string, data []byte) {
	if !validName(name) || (r.max >= 0 && len(data) > r.max) || r.exclude(name, data) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.files[name]; !ok {
		r.files[name] = bytes.Clone(data)
	}
	delete(r.fails, name)
	delete(r.fails, name+"/")
}

// recordDir records a directory; listed says its listing succeeded.
func (r *Recorder) recordDir(name string, listed bool) {
	if !validName(name) || r.exclude(name, nil) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dirs[name] = r.dirs[name] || listed
	delete(r.fails, name)
	if listed || r.fails[name+"/"] == NotExist {
		delete(r.fails, name+"/")
	}
}

// recordEntries records the subdirectories of a listing of dir.
func (r *Recorder) recordEntries(dir string, es []fs.DirEntry) {
	for _, e := range es {
		p := path.Join(dir, e.Name())
		switch {
		case e.IsDir():
			r.recordDir(p, false)
		case e.Type()&fs.ModeSymlink != 0 && dir != "proc" && !strings.HasPrefix(dir, "proc/"):
			// Symlinks below proc are not followed: proc/PID/cwd can
			// hang on a dead network file system.
			if info, err := fs.Stat(r.fsys, p); err == nil && info.IsDir() {
				r.recordDir(p, false)
			}
		}
	}
}

// recordFail records a failed read (dir: a failed listing), unless
// excluded, or the path was read successfully, or a failure is already
// recorded for it.
func (r *Recorder) recordFail(name string, err error, dir bool) {
	if !validName(name) || r.exclude(name, nil) {
		return
	}
	kind := KindOf(err)
	key := name
	if dir {
		key += "/"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.files[name]; ok {
		return
	}
	if listed, ok := r.dirs[name]; ok && (!dir || listed || kind == NotExist) {
		return
	}
	if _, ok := r.fails[key]; !ok {
		r.fails[key] = kind
	}
}

// recFile is an open regular file of a Recorder.
type recFile struct {
	fs.File
	r    *Recorder
	name string
	buf  []byte
	over bool // larger than the size limit: not recorded
	done bool // recorded (or given up)
}

// Read reads from the file and records its content at io.EOF.
func (f *recFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if f.done {
		return n, err
	}
	if !f.over {
		if f.r.max >= 0 && len(f.buf)+n > f.r.max {
			f.over, f.buf = true, nil
		} else {
			f.buf = append(f.buf, p[:n]...)
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		f.done = true
		if !f.over {
			f.r.recordFile(f.name, f.buf)
		}
		f.buf = nil
	case err != nil:
		f.done = true
		f.r.recordFail(f.name, err, false)
		f.buf = nil
	}
	return n, err
}

// recDir is an open directory of a Recorder.
type recDir struct {
	fs.ReadDirFile
	r    *Recorder
	name string
}

// ReadDir lists the directory and records its subdirectories.
func (d *recDir) ReadDir(n int) ([]fs.DirEntry, error) {
	es, err := d.ReadDirFile.ReadDir(n)
	d.r.recordEntries(d.name, es)
	switch {
	case err == nil || errors.Is(err, io.EOF):
		d.r.recordDir(d.name, true)
	default:
		d.r.recordFail(d.name, err, true)
	}
	return es, err
}
