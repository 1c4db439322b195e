//go:build !linux

package capture

import "errors"

// errESRCH stands in for ESRCH, which only Linux procfs returns.
var errESRCH = errors.New("no such process")
