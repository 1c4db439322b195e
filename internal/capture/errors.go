package capture

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrCorrupt is matched (errors.Is) by every error about a malformed or
// truncated archive, provenance or errors file.
var ErrCorrupt = errors.New("corrupt capture")

// ErrNotCapture is matched (errors.Is) by the error of Load and
// ParseProvenance when the input does not start with the [Magic] line.
var ErrNotCapture = errors.New("not a memdoctor capture")

// ErrCaptureFailed is matched (errors.Is) by the error a replay returns for a
// path whose read failed on the captured host for a reason other than
// not-exist or permission (an I/O error, EINVAL, ...).
var ErrCaptureFailed = errors.New("read failed on the captured host")

// FormatError is a malformed line of an archive (or of a provenance or errors
// file). It unwraps to [ErrNotCapture] or [ErrCorrupt].
type FormatError struct {
	Line       int    // 1-based; 0 when the error is about the whole input
	Msg        string // what is wrong
	NotCapture bool   // the input is not a capture at all (bad magic line)
}

// Error returns "line N: Msg".
func (e *FormatError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Unwrap returns ErrNotCapture or ErrCorrupt.
func (e *FormatError) Unwrap() error {
	if e.NotCapture {
		return ErrNotCapture
	}
	return ErrCorrupt
}

// corrupt returns a FormatError matching ErrCorrupt.
func corrupt(line int, format string, args ...any) *FormatError {
	return &FormatError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// FailureKind classifies a read that failed on the captured host.
type FailureKind string

// The failure kinds, as written in memdoctor/errors.
const (
	NotExist   FailureKind = "not-exist"  // fs.ErrNotExist, or ESRCH (process gone)
	Permission FailureKind = "permission" // fs.ErrPermission (EACCES, EPERM)
	Other      FailureKind = "other"      // anything else
)

// KindOf classifies err. It returns "" for a nil error.
func KindOf(err error) FailureKind {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, errESRCH):
		return NotExist
	case errors.Is(err, fs.ErrPermission):
		return Permission
	default:
		return Other
	}
}

// Err returns the error a replay wraps for this kind: fs.ErrNotExist,
// fs.ErrPermission or ErrCaptureFailed.
func (k FailureKind) Err() error {
	switch k {
	case NotExist:
		return fs.ErrNotExist
	case Permission:
		return fs.ErrPermission
	default:
		return ErrCaptureFailed
	}
}

// valid reports whether k is one of the three kinds.
func (k FailureKind) valid() bool {
	return k == NotExist || k == Permission || k == Other
}
