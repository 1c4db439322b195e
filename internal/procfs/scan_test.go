package procfs

import "testing"

// isSpace is ASCII white space, as the six comparisons it replaced said,
// for every byte.
func TestIsSpaceEveryByte(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		want := b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
		if isSpace(b) != want {
			t.Errorf("isSpace(%#x) = %v, want %v", b, isSpace(b), want)
		}
	}
}
