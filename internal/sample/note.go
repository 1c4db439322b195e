package sample

// Note says what could not be read or computed, why, what it hides, and how
// to get it. Notes travel beside results; nothing is dropped silently.
type Note struct {
	// Source names the file or subsystem, e.g. "proc/slabinfo".
	Source string `json:"source"`
	// Message says what happened.
	Message string `json:"message"`
	// Hides says which part of the diagnosis is weaker for it.
	Hides string `json:"hides,omitempty"`
	// Fix says how to get the data (run as root, kernel option, flag).
	Fix string `json:"fix,omitempty"`
}
