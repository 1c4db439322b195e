package capture

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Magic is the first line of every capture archive and provenance file.
const Magic = "memdoctor capture v1"

// magicPrefix starts the magic line of every version of the format.
const magicPrefix = "memdoctor capture "

// Header keys of the Provenance fields.
const (
	keyKernel   = "kernel"
	keyArch     = "arch"
	keyPageSize = "pagesize"
	keyCgroup   = "cgroup"
	keyTime     = "time"
	keyGlibc    = "glibc"
	keyRedacted = "redacted"
	keyTool     = "tool"
	keyNote     = "note"
)

var knownKeys = []string{keyKernel, keyArch, keyPageSize, keyCgroup, keyTime, keyGlibc, keyRedacted, keyTool, keyNote}

// Provenance describes where and when a capture was taken. It is stored as
// the archive's txtar comment: the [Magic] line, then one "key: value" line
// per field, in the order of the fields below, then the Extra keys sorted.
// Zero-valued fields are left out, except redacted, which is always written.
type Provenance struct {
	Kernel     string    // kernel release, such as "6.8.0-45-generic" (key "kernel")
	Arch       string    // GOARCH ("amd64") or uname machine ("x86_64") (key "arch")
	PageSize   int       // page size of the captured host in bytes; 0 if unknown (key "pagesize")
	CgroupMode string    // "v1", "v2" or "hybrid" (key "cgroup")
	Time       time.Time // when the capture was taken, in UTC, RFC 3339 on disk (key "time")
	Glibc      string    // glibc banner of the captured host (key "glibc")
	Redacted   bool      // whether cmdline arguments were removed (key "redacted")
	Tool       string    // memdoctor version that wrote the capture (key "tool")
	Note       string    // free text from the user (key "note")

	// Extra holds every other key. Keys are made of ASCII letters, digits,
	// '.', '_' and '-', and must not be one of the keys above.
	Extra map[string]string
}

// MarshalText returns the provenance as a header: the magic line and the
// "key: value" lines, each ending in a newline. It fails on an Extra key
// that is malformed or shadows a field's key.
func (p Provenance) MarshalText() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(Magic + "\n")
	put := func(k, v string) {
		if v == "" {
			return
		}
		b.WriteString(k + ": " + quoteIfNeeded(v) + "\n")
	}
	put(keyKernel, p.Kernel)
	put(keyArch, p.Arch)
	if p.PageSize != 0 {
		put(keyPageSize, strconv.Itoa(p.PageSize))
	}
	put(keyCgroup, p.CgroupMode)
	if !p.Time.IsZero() {
		put(keyTime, p.Time.UTC().Format(time.RFC3339Nano))
	}
	put(keyGlibc, p.Glibc)
	put(keyRedacted, strconv.FormatBool(p.Redacted))
	put(keyTool, p.Tool)
	put(keyNote, p.Note)
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		if !validKey(k) {
			return nil, fmt.Errorf("provenance: malformed extra key %q", k)
		}
		if slices.Contains(knownKeys, k) {
			return nil, fmt.Errorf("provenance: extra key %q is a field's key", k)
		}
		v := p.Extra[k]
		if v == "" {
			b.WriteString(k + ":\n")
			continue
		}
		put(k, v)
	}
	return b.Bytes(), nil
}

// UnmarshalText parses a header written by MarshalText; see
// [ParseProvenance].
func (p *Provenance) UnmarshalText(data []byte) error {
	q, err := ParseProvenance(data)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// ParseProvenance parses a provenance header: the [Magic] line, then
// "key: value" lines. Unknown keys go to Extra; blank lines and lines
// starting with "#" are ignored; CRLF line ends are accepted. It fails,
// naming the line, when the first line is not the magic (errors.Is
// [ErrNotCapture]) or a line is malformed (errors.Is [ErrCorrupt]).
func ParseProvenance(data []byte) (Provenance, error) {
	p, err := parseHeader(data)
	if err != nil {
		return Provenance{}, fmt.Errorf("parse provenance: %w", err)
	}
	return p, nil
}

// parseHeader is ParseProvenance without the wrapping; line numbers count
// from the first line of data.
func parseHeader(data []byte) (Provenance, error) {
	var p Provenance
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	if len(lines) == 0 || lines[0] != Magic {
		first := ""
		if len(lines) > 0 {
			first = lines[0]
		}
		if strings.HasPrefix(first, magicPrefix) {
			return p, &FormatError{Line: 1, Msg: fmt.Sprintf("unsupported capture format %.40q, this memdoctor reads %q", first, Magic), NotCapture: true}
		}
		return p, &FormatError{Line: 1, Msg: fmt.Sprintf("not a memdoctor capture: first line is %.40q, want %q", first, Magic), NotCapture: true}
	}
	seen := map[string]bool{}
	for i, line := range lines[1:] {
		n := i + 2
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || !validKey(k) {
			return p, corrupt(n, "malformed provenance line %.60q, want \"key: value\"", line)
		}
		if seen[k] {
			return p, corrupt(n, "duplicate provenance key %q", k)
		}
		seen[k] = true
		v = strings.TrimPrefix(v, " ")
		if strings.HasPrefix(v, `"`) {
			u, err := strconv.Unquote(v)
			if err != nil {
				return p, corrupt(n, "provenance key %q: bad quoted value %.60s", k, v)
			}
			v = u
		}
		switch k {
		case keyKernel:
			p.Kernel = v
		case keyArch:
			p.Arch = v
		case keyPageSize:
			ps, err := strconv.Atoi(v)
			if err != nil || ps < 0 {
				return p, corrupt(n, "provenance key %q: %.30q is not a page size", k, v)
			}
			p.PageSize = ps
		case keyCgroup:
			p.CgroupMode = v
		case keyTime:
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return p, corrupt(n, "provenance key %q: %.40q is not an RFC 3339 time", k, v)
			}
			p.Time = t.UTC()
		case keyGlibc:
			p.Glibc = v
		case keyRedacted:
			r, err := strconv.ParseBool(v)
			if err != nil {
				return p, corrupt(n, "provenance key %q: %.30q is not true or false", k, v)
			}
			p.Redacted = r
		case keyTool:
			p.Tool = v
		case keyNote:
			p.Note = v
		default:
			if p.Extra == nil {
				p.Extra = map[string]string{}
			}
			p.Extra[k] = v
		}
	}
	return p, nil
}

// validKey reports whether k can be a header key.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// needsQuote reports whether s cannot be written as raw text on a header or
// errors-file line and read back unchanged.
func needsQuote(s string) bool {
	if s != strings.TrimSpace(s) || strings.HasPrefix(s, `"`) || !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// quoteIfNeeded returns s, double-quoted when needsQuote.
func quoteIfNeeded(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return s
}
