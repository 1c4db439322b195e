package main

import (
	"encoding/json"
	"io"

	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// writeJSON writes v as indented JSON. Strings stay exact; DEL and C1
// characters are written as \u escapes, so hostile names and labels cannot
// act on the terminal that shows the document.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termsafe.JSON(b), '\n'))
	return err
}
