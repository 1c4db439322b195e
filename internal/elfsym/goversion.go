package elfsym

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"io"
)

// goBuildInfoMagic opens the .go.buildinfo section of a Go executable.
var goBuildInfoMagic = []byte("\xff Go buildinf:")

// maxBuildInfoHeader is how much of .go.buildinfo GoVersion reads: the
// 32-byte header and the version string after it (a varint and at most a
// few dozen bytes in practice).
const maxBuildInfoHeader = 32 + binary.MaxVarintLen64 + 256

// GoVersion is the Go version an executable's build information names
// ("go1.22.3"), false for an executable that is not Go (or not readable).
// ef is ra parsed (nil: it is parsed here).
//
// debug/buildinfo.Read looks for the build information in the
// .go.buildinfo section and, when there is none, searches the whole
// writable segment for its mark: for a C program such as bash that is
// 400 KB read and scanned to learn nothing. Every Go executable the Go
// linker writes for ELF has that section, so an ELF object with section
// headers and no .go.buildinfo is answered without reading; the version is
// read straight from the section's header when it holds the string inline
// (Go 1.18 and later); anything else (no section headers, an older Go, not
// ELF) goes to debug/buildinfo as before.
func GoVersion(ra io.ReaderAt, ef *elf.File) (string, bool) {
	if ef == nil {
		var err error
		if ef, err = elf.NewFile(ra); err != nil {
			return readBuildInfo(ra)
		}
	}
	if len(ef.Sections) == 0 {
		return readBuildInfo(ra)
	}
	s := ef.Section(".go.buildinfo")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return "", false
	}
	n := s.Size
	if n > maxBuildInfoHeader {
		n = maxBuildInfoHeader
	}
	buf := make([]byte, n)
	if got, err := s.ReadAt(buf, 0); err != nil && got < len(buf) {
		buf = buf[:got]
	}
	if v, ok := inlineGoVersion(buf); ok {
		return v, true
	}
	return readBuildInfo(ra)
}

// inlineGoVersion reads the version from a .go.buildinfo header that
// holds its strings inline (flag bit 2, Go 1.18+): the magic, the pointer
// size and the flags, padded to 32 bytes, then the version as a
// varint-prefixed string. ok is false for any other layout.
func inlineGoVersion(b []byte) (string, bool) {
	if len(b) < 32 || !bytes.HasPrefix(b, goBuildInfoMagic) || b[15]&2 == 0 {
		return "", false
	}
	l, k := binary.Uvarint(b[32:])
	if k <= 0 || l == 0 || l > uint64(len(b)-32-k) {
		return "", false
	}
	v := b[32+k : 32+k+int(l)]
	if !bytes.HasPrefix(v, []byte("go")) && !bytes.HasPrefix(v, []byte("devel")) {
		return "", false
	}
	return string(v), true
}

func readBuildInfo(ra io.ReaderAt) (string, bool) {
	bi, err := buildinfo.Read(ra)
	if err != nil || bi.GoVersion == "" {
		return "", false
	}
	return bi.GoVersion, true
}
