package source

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// snapFS holds the files of one cron snapshot in memory, by slash path
// ("proc/meminfo"); its directories are the ones the paths imply. It only
// opens: fs.ReadFile, fs.ReadDir and fs.Stat go through Open, so every
// failure reads "open NAME: file does not exist", the text cronNote
// rewrites.
type snapFS map[string][]byte

// Open opens a file or an implied directory.
func (m snapFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if data, ok := m[name]; ok {
		return &snapFile{info: snapInfo{name: path.Base(name), size: int64(len(data))}, Reader: bytes.NewReader(data)}, nil
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	var ents []fs.DirEntry
	for p, data := range m {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		child, _, isDir := strings.Cut(rest, "/")
		if slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == child }) {
			continue
		}
		info := snapInfo{name: child, dir: isDir}
		if !isDir {
			info.size = int64(len(data))
		}
		ents = append(ents, info)
	}
	if ents == nil && name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return &snapDir{info: snapInfo{name: path.Base(name), dir: true}, path: name, ents: ents}, nil
}

// snapInfo is both the fs.FileInfo and the fs.DirEntry of a file or
// directory: files have mode 0, directories 0555.
type snapInfo struct {
	name string
	size int64
	dir  bool
}

func (i snapInfo) Name() string       { return i.name }
func (i snapInfo) Size() int64        { return i.size }
func (i snapInfo) ModTime() time.Time { return time.Time{} }
func (i snapInfo) IsDir() bool        { return i.dir }
func (i snapInfo) Sys() any           { return nil }
func (i snapInfo) Type() fs.FileMode  { return i.Mode().Type() }
func (i snapInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0
}
func (i snapInfo) Info() (fs.FileInfo, error) { return i, nil }

// snapFile is an open file.
type snapFile struct {
	info snapInfo
	*bytes.Reader
}

func (f *snapFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *snapFile) Close() error               { return nil }

// snapDir is an open directory.
type snapDir struct {
	info snapInfo
	path string
	ents []fs.DirEntry
	off  int
}

func (d *snapDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *snapDir) Close() error               { return nil }
func (d *snapDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: fs.ErrInvalid}
}

// ReadDir lists the next n entries (all that are left for n <= 0).
func (d *snapDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.off:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.off += len(rest)
	return slices.Clone(rest), nil
}
