//go:build !linux

package safeio

import (
	"errors"
	"os"
)

// FileID tells a file's version apart (Linux only).
type FileID struct {
	Dev, Ino uint64
	Size     int64
	MtimeNS  int64
}

// DirEntry is a name listed in a directory and its type.
type DirEntry struct {
	Name string
	Type uint8
}

// Entry types of DirEntry.
const (
	TypeDir     = 4
	TypeSymlink = 10
	TypeRegular = 8
	TypeUnknown = 0
)

var errBeneath = errors.New("reading below a root without following links is Linux only")

// OpenBeneath is Linux only.
func OpenBeneath(root, name string) (*os.File, FileID, error) { return nil, FileID{}, errBeneath }

// StatBeneath is Linux only.
func StatBeneath(root, name string) (FileID, error) { return FileID{}, errBeneath }

// ListBeneath is Linux only.
func ListBeneath(root, name string, maxEntries int) ([]DirEntry, FileID, error) {
	return nil, FileID{}, errBeneath
}

// OpenDirBeneath is Linux only.
func OpenDirBeneath(root, name string) (*os.File, FileID, error) { return nil, FileID{}, errBeneath }
