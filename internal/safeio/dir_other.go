//go:build !linux

package safeio

import (
	"io/fs"
	"os"
)

// SubDirs lists the names of the directory's subdirectories (cgroups are
// Linux's: elsewhere this serves copies of them, read by path).
func (d *Dir) SubDirs() ([]string, error) {
	ents, err := os.ReadDir(d.full)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// EachName calls fn with the name of every entry of the directory name.
func (d DirFS) EachName(name string, fn func(entry string)) error {
	p, err := d.join("readdir", name)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return rename(err, name)
	}
	for _, e := range ents {
		fn(e.Name())
	}
	return nil
}
