package text

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// What a server or a process chose cannot drive the terminal: escape
// sequences in errors and warnings are written escaped.
func TestStderrLinesEscaped(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	Error(&b, errors.New("bad \x1b[31mred\x1b[0m"))
	ServerWarnings(&b, []string{"partial \x1b]0;title\x07"})
	Warnf(&b, "memdoctor: note: %s\n", "file\x1b[2J")
	out := b.String()
	if strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, 0x07) {
		t.Errorf("control characters written: %q", out)
	}
	for _, want := range []string{"memdoctor: bad", "memdoctor: warning from prometheus (results may be partial): partial", "memdoctor: note: file"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing from %q", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines, want 3: %q", n, out)
	}
}

func TestPageWritten(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	PageWritten(&b, "r.html", 3, 12, 1536*1024, 0.25)
	if got, want := b.String(), "wrote r.html: 3 findings, 12 charts, 1.50 MiB in 250 ms\n"; got != want {
		t.Errorf("PageWritten = %q, want %q", got, want)
	}
}
