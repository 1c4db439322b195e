// Package procfs parses the kernel's memory-related text files (/proc, /sys)
// below an arbitrary root, so the same code reads the live host, an unpacked
// capture, or an in-memory archive.
//
// Conventions: a public FS method reads a file, a private or exported
// Parse* function parses bytes. Files are read whole (proc sizes lie).
// Every key a file contains is kept, including ones this package does not
// know yet. Malformed input returns a *ParseError naming the file and line;
// nothing panics on input.
package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/memdoctor/memdoctor/internal/safeio"
)

// FS reads kernel files below a root. Names are slash-separated and
// unrooted, as in io/fs: "proc/meminfo", "sys/fs/cgroup/memory".
type FS struct {
	fsys fs.FS
	// PageSize is the page size of the host the files come from, in bytes.
	// Never assume 4096: 64 KiB-page hosts exist.
	PageSize int
	// GlibcBanner, when set, is the glibc release banner of the host the
	// files come from (a capture records it in its provenance instead of
	// the libc binary); GlibcVersion then parses it instead of reading.
	GlibcBanner string
}

// NewFS returns an FS over the directory root ("/" for the live host).
func NewFS(root string) FS {
	return FS{fsys: safeio.NewDirFS(root, safeio.ProcFile), PageSize: os.Getpagesize()}
}

// NewFSFrom returns an FS over any fs.FS, such as an unpacked capture held in
// memory, with the page size recorded for it.
func NewFSFrom(fsys fs.FS, pageSize int) FS {
	if pageSize <= 0 {
		pageSize = 4096
	}
	return FS{fsys: fsys, PageSize: pageSize}
}

// Sys returns the underlying fs.FS.
func (f FS) Sys() fs.FS { return f.fsys }

// ReadFile reads a whole file.
func (f FS) ReadFile(name string) ([]byte, error) {
	return fs.ReadFile(f.fsys, clean(name))
}

// ReadSmall reads a small kernel file (a cgroup's memory.* file): on the
// live host in one open, read and close (safeio.ReadSmall), elsewhere as
// ReadFile.
func (f FS) ReadSmall(name string) ([]byte, error) {
	if s, ok := f.fsys.(interface {
		ReadSmall(name string) ([]byte, error)
	}); ok {
		return s.ReadSmall(clean(name))
	}
	return f.ReadFile(name)
}

// EachName calls fn with the name of every entry of the directory name, in
// no particular order; the name is valid until fn returns (fn copies what
// it keeps). On the live host nothing is made for an entry fn passes over
// (safeio.DirFS.EachName); elsewhere it is fs.ReadDir's listing.
func (f FS) EachName(name string, fn func(entry string)) error {
	if e, ok := f.fsys.(interface {
		EachName(name string, fn func(entry string)) error
	}); ok {
		return e.EachName(clean(name), fn)
	}
	ents, err := fs.ReadDir(f.fsys, clean(name))
	if err != nil {
		return err
	}
	for _, d := range ents {
		fn(d.Name())
	}
	return nil
}

// Dir is an open directory: its small files and its subdirectories.
type Dir interface {
	// ReadSmall reads a small file of the directory (see FS.ReadSmall).
	ReadSmall(file string) ([]byte, error)
	// SubDirs lists the names of its subdirectories.
	SubDirs() ([]string, error)
	Close() error
}

// OpenDir opens a directory: on the live host one descriptor its files
// are opened relative to (safeio.Dir: no path walk per file), elsewhere
// paths below name.
func (f FS) OpenDir(name string) (Dir, error) {
	if o, ok := f.fsys.(interface {
		OpenDir(name string) (*safeio.Dir, error)
	}); ok {
		d, err := o.OpenDir(clean(name))
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return pathDir{f, clean(name)}, nil
}

// pathDir is a Dir of any fs.FS, by path.
type pathDir struct {
	f    FS
	name string
}

func (d pathDir) ReadSmall(file string) ([]byte, error) { return d.f.ReadSmall(d.name + "/" + file) }

func (d pathDir) SubDirs() ([]string, error) {
	ents, err := d.f.ReadDir(d.name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (pathDir) Close() error { return nil }

// ReadDir lists a directory.
func (f FS) ReadDir(name string) ([]fs.DirEntry, error) {
	return fs.ReadDir(f.fsys, clean(name))
}

// Exists reports whether name can be stat'ed.
func (f FS) Exists(name string) bool {
	_, err := fs.Stat(f.fsys, clean(name))
	return err == nil
}

func clean(name string) string {
	if fs.ValidPath(name) {
		return name // already clean: no allocation on the hot path
	}
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" {
		return "."
	}
	return name
}

// ParseError is a malformed line in a kernel file.
type ParseError struct {
	File string // for example "proc/zoneinfo"
	Line int    // 1-based; 0 when the error is about the whole file
	Err  error
}

// Error formats the error as "file: line N: reason".
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the reason, so errors.Is(err, ErrMalformed) works.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrMalformed is wrapped by every ParseError caused by unexpected content.
var ErrMalformed = errors.New("malformed")

func perr(file string, line int, format string, args ...any) error {
	return &ParseError{File: file, Line: line, Err: fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)}
}

// IsNotExist reports whether err means the file or process does not exist
// (including a process that exited between listing and reading: ESRCH).
func IsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errESRCH)
}

// IsPermission reports whether err is a permission error.
func IsPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission)
}

// ReadLink reads a symbolic link (a /proc/PID/fd entry: "socket:[123]").
func (f FS) ReadLink(name string) (string, error) {
	return fs.ReadLink(f.fsys, clean(name))
}

// NewProcFS returns an FS over a proc filesystem mounted at mount
// (ProcMount on the live host): its proc/... names are read below mount,
// and nothing else exists in it. The tracers take the proc mount as an
// option.
func NewProcFS(mount string) FS {
	return FS{fsys: procMountFS{safeio.NewDirFS(mount, safeio.ProcFile)}, PageSize: os.Getpagesize()}
}

// procMountFS maps "proc/X" to X below a proc mount.
type procMountFS struct{ d safeio.DirFS }

func (p procMountFS) name(op, name string) (string, error) {
	if rest, ok := strings.CutPrefix(name, "proc/"); ok {
		return rest, nil
	}
	if name == "proc" {
		return ".", nil
	}
	return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (p procMountFS) Open(name string) (fs.File, error) {
	n, err := p.name("open", name)
	if err != nil {
		return nil, err
	}
	return p.d.Open(n)
}

func (p procMountFS) ReadFile(name string) ([]byte, error) {
	n, err := p.name("read", name)
	if err != nil {
		return nil, err
	}
	return p.d.ReadFile(n)
}
