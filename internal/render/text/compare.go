package text

import (
	"bufio"
	"io"

	"github.com/memdoctor/memdoctor/internal/compare"
	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// CompareText prints a comparison: each metric's medians and verdict, then
// the notes.
func CompareText(out io.Writer, r *compare.Result) error {
	w := bufio.NewWriter(out)
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) } // bufio keeps the first error for Flush
	pf("memdoctor compare: A = %s\n                   B = %s\n", r.A, r.B)
	pf("values are %ss; difference of medians with a bootstrap 95%% interval\n\n", r.Unit)
	for _, row := range r.Rows {
		of := r.Unit
		if row.Of != "" {
			of = row.Of
		}
		pf("%s\n", row.Title)
		pf("  A: median %-14s (%s)\n", compare.Format(row.MedianA, row.Unit), format.Count(float64(len(row.A)), of, of+"s"))
		pf("  B: median %-14s (%s)\n", compare.Format(row.MedianB, row.Unit), format.Count(float64(len(row.B)), of, of+"s"))
		pf("  → %s\n\n", row.Verdict)
	}
	if len(r.Rows) == 0 {
		pf("no metric is present in both groups\n")
	}
	for _, n := range r.Notes {
		pf("note: %s\n", n)
	}
	return w.Flush()
}
