package text

import (
	"fmt"
	"io"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// The lines commands write on stderr besides progress: every argument is
// escaped (a process, a server or a file chooses the text). A failed write
// to stderr has nowhere left to be reported.

// Error writes a command's error: "memdoctor: ERROR".
func Error(w io.Writer, err error) {
	_, _ = fmt.Fprintln(w, "memdoctor:", termsafe.Text(err.Error()))
}

// Warnf writes a formatted message, its arguments escaped.
func Warnf(w io.Writer, format string, a ...any) {
	_, _ = termsafe.Fprintf(w, format, a...)
}

// ServerWarnings writes a Prometheus server's partial-data warnings, one
// line each.
func ServerWarnings(w io.Writer, ws []string) {
	for _, x := range ws {
		_, _ = fmt.Fprintln(w, "memdoctor: warning from prometheus (results may be partial):", termsafe.Escape(x))
	}
}

// Wrote says what a command wrote: "wrote PATH (BEFORE SIZE AFTER)", the
// size as every report writes sizes.
func Wrote(w io.Writer, path string, size int64, before, after string) {
	Warnf(w, "wrote %s (%s%s%s)\n", path, before, format.Bytes(size), after)
}

// PageWritten says what `memdoctor report` wrote: "wrote PATH: N findings,
// M charts, SIZE in TIME".
func PageWritten(w io.Writer, path string, findings, charts int, size int64, seconds float64) {
	Warnf(w, "wrote %s: %d findings, %d charts, %s in %s\n", path, findings, charts, format.Bytes(size), format.Seconds(seconds))
}
