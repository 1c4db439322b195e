// Package storetest damages a store file the way a bad disk or a stray
// write would, for tests of the store's checks.
package storetest

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// FlipValueBits flips three bits in the first value of a chunk, in every
// copy of the chunk's bytes in the file (a page freed by an update may
// hold an old one). SQLite's own checks still pass and the chunk still
// decodes, to other values: only the chunk's checksum can tell. chunk is
// the chunk's data as the store wrote it (a 2-byte count, the first
// timestamp as a varint, then the first value's 8 bytes).
func FlipValueBits(t testing.TB, path string, chunk []byte) {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunk) < 24 || !bytes.Contains(file, chunk) {
		t.Fatalf("the chunk's %d bytes are not in the file", len(chunk))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	_, k := binary.Varint(chunk[2:]) // the first timestamp; the first value follows
	for at := 0; ; {
		i := bytes.Index(file[at:], chunk)
		if i < 0 {
			break
		}
		off := int64(at + i + 2 + k)
		for _, flip := range []struct {
			at   int64
			mask byte
		}{{off + 7, 0x01}, {off + 6, 0x40}, {off + 4, 0x08}} {
			if _, err := f.WriteAt([]byte{file[flip.at] ^ flip.mask}, flip.at); err != nil {
				t.Fatal(err)
			}
		}
		at += i + len(chunk)
	}
}
