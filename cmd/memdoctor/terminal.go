package main

import (
	"io"

	"github.com/memdoctor/memdoctor/internal/report"
)

// writeJSON writes v as indented JSON: exact strings, DEL and C1 written as
// \u escapes, and a NaN or infinity an error naming where it is.
func writeJSON(w io.Writer, v any) error { return report.WriteJSON(w, v) }
