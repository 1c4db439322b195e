//go:build !linux

package safeio

import (
	"errors"
	"os"
)

// Info identifies an opened file and its owner.
type Info struct {
	FileID
	UID     uint32
	CtimeNS int64
}

var errTarget = errors.New("opening a target process' files is Linux only")

// OpenFile is Linux only.
func OpenFile(path string, maxSize int64) (*os.File, Info, error) { return nil, Info{}, errTarget }

// OpenFileFD is Linux only.
func OpenFileFD(path string, maxSize int64) (int, Info, error) { return -1, Info{}, errTarget }

// OpenInRootFD is Linux only.
func OpenInRootFD(root, name string, maxSize int64) (int, Info, error) {
	return -1, Info{}, errTarget
}

// OpenInRoot is Linux only.
func OpenInRoot(root, name string, maxSize int64) (*os.File, Info, error) {
	return nil, Info{}, errTarget
}
