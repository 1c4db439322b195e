//go:build !linux

package procfs

import "errors"

var errESRCH = errors.New("no such process")
