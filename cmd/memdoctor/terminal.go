package main

import (
	"io"

	"github.com/memdoctor/memdoctor/internal/render/text"
)

// writeJSON writes v as indented JSON: exact strings, DEL and C1 written as
// \u escapes, and a NaN or infinity an error naming where it is.
func writeJSON(w io.Writer, v any) error { return text.WriteJSON(w, v) }

// printed returns what prints a command's result: as JSON (asJSON) or
// with text; a non-nil error is returned instead.
func printed[T any](w io.Writer, asJSON bool, text func(io.Writer, T) error) func(T, error) error {
	return func(v T, err error) error {
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(w, v)
		}
		return text(w, v)
	}
}
