package model

import (
	"fmt"
	"hash/fnv"
	"unicode/utf8"
)

// MaxInstanceRef is the longest instance name repeated whole where a
// note, an unread file or a rule not evaluated is prefixed with its
// instance. A longer name (any label value can be one) is written once
// whole, in the report's list of instances, and shortened in the
// prefixes: an instance named by 2 MiB would otherwise be printed, and
// held, once for each of its forty-odd notes.
const MaxInstanceRef = 256

// InstanceRef is how a note names its instance: the name itself up to
// MaxInstanceRef bytes, else its first 200 bytes (cut between whole
// characters), its length and a short hash that tells apart names with
// the same beginning.
func InstanceRef(name string) string {
	if len(name) <= MaxInstanceRef {
		return name
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("%s… (%d bytes, #%08x)", name[:cut], len(name), h.Sum32())
}
