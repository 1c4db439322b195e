//go:build !linux

package procfs

import "errors"

var errESRCH = errors.New("no such process")

func fileID(interface{ Sys() any }) (dev, ino uint64, ok bool) { return 0, 0, false }
