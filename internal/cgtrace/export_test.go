package cgtrace

// SetCreatorSlots sizes the kernel side's table of creators of the traces
// started next (0: the program's own size) and returns the previous size.
func SetCreatorSlots(n uint32) uint32 {
	old := creatorSlots
	creatorSlots = n
	return old
}
