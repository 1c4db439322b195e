package leaktrace

import "testing"

// glibc 2.36's malloc begins with push %r12 (emulated), free with
// test %rdi,%rdi (stepped).
func TestEmulated(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{[]byte{0x41, 0x54, 0x55, 0x53}, true},  // push %r12
		{[]byte{0x55, 0x48, 0x89, 0xe5}, true},  // push %rbp
		{[]byte{0xe9, 0, 0, 0}, true},           // jmp
		{[]byte{0x48, 0x85, 0xff, 0x0f}, false}, // test %rdi,%rdi
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, false}, // endbr64
		{[]byte{0x41, 0x89, 0xc0}, false},       // mov %eax,%r8d
		{nil, false},
	} {
		if got := emulated(c.b); got != c.want {
			t.Errorf("emulated(% x) = %v, want %v", c.b, got, c.want)
		}
	}
}
