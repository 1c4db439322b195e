package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memdoctor/memdoctor/internal/safeio"
)

// Paths of the metadata in an unpacked directory.
const (
	provenanceFile = "memdoctor/provenance"
	errorsFile     = "memdoctor/errors"
)

// ReadContents reads every file, directory and failure of fsys, except
// the reserved top-level directory "memdoctor". For an fs.FS returned by
// Load it is exact, failures included, and lists only the directories that
// are empty (the others are implied by their entries). For any other fs.FS
// it walks the
// tree: files are read, symlinks to directories are kept as directories
// (not followed further), devices and pipes are skipped, and a failed read
// or listing becomes a failure; an error is returned only when the root
// cannot be listed.
func ReadContents(fsys fs.FS) (Contents, error) {
	if f, ok := fsys.(*failFS); ok {
		if m, ok := f.fsys.(*memFS); ok && !f.hide {
			return m.contents(f.fails), nil
		}
	}
	c := Contents{Files: map[string][]byte{}, Failures: map[string]FailureKind{}}
	dirs := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case p == ".":
			return err
		case p == reservedDir:
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case err != nil: // listing p failed
			delete(dirs, p)
			c.Failures[p+"/"] = KindOf(err)
			return nil
		case d.IsDir():
			dirs[p] = true
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			info, err := fs.Stat(fsys, p)
			if err == nil && info.IsDir() {
				dirs[p] = true
				return nil
			}
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
		case !d.Type().IsRegular():
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			c.Failures[p] = KindOf(err)
			return nil
		}
		c.Files[p] = data
		return nil
	})
	if err != nil {
		return Contents{}, fmt.Errorf("read capture contents: %w", err)
	}
	c.Dirs = sortedKeys(dirs)
	return c, nil
}

// contents returns the items of a memFS with the failures fails.
func (m *memFS) contents(fails map[string]item) Contents {
	c := Contents{Files: map[string][]byte{}, Failures: map[string]FailureKind{}}
	for name, n := range m.nodes {
		if name == "." {
			continue
		}
		if _, ok := fails[name]; ok {
			continue
		}
		if n.mode.IsDir() {
			if len(n.kids) == 0 { // else implied by its entries
				c.Dirs = append(c.Dirs, name)
			}
			continue
		}
		c.Files[name] = n.data
	}
	for name, it := range fails {
		if it.dir {
			name += "/"
		}
		c.Failures[name] = it.fail
	}
	slices.Sort(c.Dirs)
	return c
}

// Unpack writes the contents of fsys (normally returned by Load) into dir,
// for --root DIR: files with mode 0644, directories with mode 0755, an
// empty placeholder for a path whose read failed (mode 0 when the failure
// was permission), dir/memdoctor/provenance holding prov as written by
// MarshalText, and dir/memdoctor/errors holding the failures in the format
// of the archive's memdoctor/errors. Like Write, it never writes
// proc/PID/environ and, when prov.Redacted, cuts proc/PID/cmdline to
// argv[0]. dir is created if needed; Unpack never overwrites a file and
// never writes outside dir (symlinks in dir included). Replay the result
// with OpenDir.
func Unpack(fsys fs.FS, prov Provenance, dir string) error {
	if err := unpack(fsys, prov, dir); err != nil {
		return fmt.Errorf("unpack capture into %s: %w", dir, err)
	}
	return nil
}

// unpack is Unpack without the wrapping.
func unpack(fsys fs.FS, prov Provenance, dir string) error {
	header, err := prov.MarshalText()
	if err != nil {
		return err
	}
	c, err := ReadContents(fsys)
	if err != nil {
		return err
	}
	t, err := c.tree(prov.Redacted)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	create := func(name string, data []byte, perm fs.FileMode) error {
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return errors.Join(err, f.Close())
	}
	var errs strings.Builder
	for _, name := range sortedKeys(t.items) {
		it := t.items[name]
		if it.fail != "" {
			key := name
			if it.dir {
				key += "/"
			}
			errs.WriteString(quoteIfNeeded(key) + "\t" + string(it.fail) + "\n")
		}
		switch {
		case it.fail == NotExist:
		case it.dir:
			err = root.MkdirAll(name, 0o755)
		case it.fail == Permission:
			err = create(name, nil, 0)
		default:
			err = create(name, it.data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	if err := create(provenanceFile, header, 0o644); err != nil {
		return err
	}
	if errs.Len() > 0 {
		return create(errorsFile, []byte(errs.String()), 0o644)
	}
	return nil
}

// ReadProvenanceDir reads dir/memdoctor/provenance, written by Unpack. A
// missing file yields the zero Provenance and no error.
func ReadProvenanceDir(dir string) (Provenance, error) {
	name := filepath.Join(dir, filepath.FromSlash(provenanceFile))
	data, err := safeio.ReadFile(name, safeio.Config)
	if errors.Is(err, fs.ErrNotExist) {
		return Provenance{}, nil
	}
	if err != nil {
		return Provenance{}, fmt.Errorf("read provenance: %w", err)
	}
	p, err := parseHeader(data)
	if err != nil {
		return Provenance{}, fmt.Errorf("read provenance %s: %w", name, err)
	}
	return p, nil
}

// OpenDir returns an fs.FS replaying a directory written by Unpack: reads
// of the paths in dir/memdoctor/errors fail as recorded (as with Load), and
// the directory "memdoctor" itself is hidden. A directory without
// dir/memdoctor/provenance (an unpacked tarball, a chroot) is served as
// is, with the zero Provenance.
func OpenDir(dir string) (fs.FS, Provenance, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, Provenance{}, fmt.Errorf("open capture directory: %w", err)
	}
	if !info.IsDir() {
		return nil, Provenance{}, fmt.Errorf("open capture directory %s: not a directory", dir)
	}
	prov, err := ReadProvenanceDir(dir)
	if err != nil {
		return nil, Provenance{}, err
	}
	f := &failFS{fsys: safeio.NewDirFS(dir, safeio.ProcFile), fails: map[string]item{}}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(provenanceFile))); err == nil {
		f.hide = true
	}
	name := filepath.Join(dir, filepath.FromSlash(errorsFile))
	data, err := safeio.ReadFile(name, safeio.Config)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, Provenance{}, fmt.Errorf("open capture directory: %w", err)
	default:
		t := newTree()
		if err := parseErrors(t, data, 1); err != nil {
			return nil, Provenance{}, fmt.Errorf("open capture directory: %s: %w", name, err)
		}
		f.fails = t.items
	}
	return f, prov, nil
}
