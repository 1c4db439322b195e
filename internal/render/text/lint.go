package text

import (
	"io"
	"strings"

	"github.com/memdoctor/memdoctor/internal/lint"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// LintText writes a lint report for a terminal.
func LintText(w io.Writer, r *lint.Report) error {
	var b strings.Builder
	for _, f := range r.Files {
		_, _ = termsafe.Fprintf(&b, "%s: read as %s, %d producer settings recognised\n", f.Path, f.Format, f.Recognised)
	}
	if len(r.Findings) == 0 {
		b.WriteString("\nno findings\n")
	}
	for _, f := range r.Findings {
		_, _ = termsafe.Fprintf(&b, "\n[%s] %s  %s\n", strings.ToUpper(string(f.Severity)), f.ID, f.Subject)
		_, _ = termsafe.Fprintf(&b, "  %s\n", f.Summary)
		for _, e := range f.Evidence {
			if e.Text != "" {
				_, _ = termsafe.Fprintf(&b, "    %s: %s\n", e.Name, e.Text)
				continue
			}
			_, _ = termsafe.Fprintf(&b, "    %s: %g %s\n", e.Name, e.Value, e.Unit)
		}
		for _, rm := range f.Remedies {
			_, _ = termsafe.Fprintf(&b, "  fix: %s\n", rm.Title)
			for _, c := range rm.Commands {
				_, _ = termsafe.Fprintf(&b, "      %s\n", c)
			}
			_, _ = termsafe.Fprintf(&b, "    risk: %s\n", rm.Risk)
			if rm.Undo != "" {
				_, _ = termsafe.Fprintf(&b, "    undo: %s\n", rm.Undo)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
