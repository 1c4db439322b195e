package model

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestInstanceRef(t *testing.T) {
	short := strings.Repeat("h", MaxInstanceRef)
	if got := InstanceRef(short); got != short {
		t.Errorf("a name of %d bytes became %q", len(short), got)
	}
	// 199 ASCII bytes then a 3-byte character straddling the 200th byte:
	// the cut falls before it, never inside it.
	long := strings.Repeat("a", 199) + "€" + strings.Repeat("b", 1000)
	ref := InstanceRef(long)
	if !utf8.ValidString(ref) {
		t.Errorf("InstanceRef cut a character: %q", ref)
	}
	if !strings.HasPrefix(ref, strings.Repeat("a", 199)+"… (1202 bytes, #") {
		t.Errorf("InstanceRef(%d bytes) = %q", len(long), ref)
	}
	if len(ref) > MaxInstanceRef {
		t.Errorf("the reference is %d bytes, over %d", len(ref), MaxInstanceRef)
	}
	other := long[:len(long)-1] + "c"
	if InstanceRef(other) == ref {
		t.Errorf("two long names with the same beginning and length share %q", ref)
	}
}
