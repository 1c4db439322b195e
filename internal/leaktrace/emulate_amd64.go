package leaktrace

// emulated says whether the kernel emulates a uprobe on the instruction
// that begins with b (arch/x86/kernel/uprobes.c: push of a register, and
// jumps, calls and nops) instead of stepping it out of line, which costs a
// second trap.
func emulated(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	op := b[0]
	if op == 0x41 && len(b) > 1 { // REX.B: push %r8..%r15
		op = b[1]
		return op >= 0x50 && op <= 0x57
	}
	switch {
	case op >= 0x50 && op <= 0x57: // push %rax..%rdi
		return true
	case op == 0xe8, op == 0xe9, op == 0xeb, op >= 0x70 && op <= 0x7f, op == 0x90:
		return true
	}
	return false
}
