package diagnose

import (
	"fmt"
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
)

func ev(name string, v float64, unit string) model.Evidence {
	return model.Evidence{Name: name, Value: v, Unit: unit}
}

func evText(name, text string) model.Evidence { return model.Evidence{Name: name, Text: text} }

// preloadGiven tailors the advice to run memdoctor's preload library: the
// processes that already map it are named as such (their stats were not
// read, and a note on each says why), and the advice is for the others.
func preloadGiven(in *Input, how string) string {
	if in.Host == nil {
		return how
	}
	var who []string
	for _, p := range in.Host.Processes {
		if p.Preload && p.Malloc == nil {
			who = append(who, fmt.Sprintf("%s (pid %d)", p.Comm, p.PID))
		}
	}
	if len(who) == 0 {
		return how
	}
	verb, its := "runs", "its stats were not read: the note on it says why"
	if len(who) > 1 {
		verb, its = "run", "their stats were not read: the note on each says why"
	}
	return fmt.Sprintf("%s already %s memdoctor's preload library, but %s; for any other process: %s",
		strings.Join(who, ", "), verb, its, how)
}
