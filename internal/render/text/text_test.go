package text

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

// The text report prints evidence in its units; the JSON keeps the exact
// values.
func TestTextEvidenceFormatted(t *testing.T) {
	t.Parallel()
	r := &model.Report{Host: &model.Host{}, Findings: []model.Finding{{ID: "available_memory_decline", Severity: model.Warning,
		Subject: "host", Summary: "s", Evidence: []model.Evidence{
			{Name: "days_until_exhausted", Value: 71.80891927083333, Unit: "days"},
			{Name: "heap_live", Value: 1.00663296e+08},
		}}}}
	var b strings.Builder
	if err := Text(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"days_until_exhausted 71.8 days", "heap_live 100663296"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	for _, raw := range []string{"71.80891927083333", "e+08"} {
		if strings.Contains(out, raw) {
			t.Errorf("text shows the raw %q", raw)
		}
	}
	b.Reset()
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "71.80891927083333") {
		t.Errorf("JSON lost precision:\n%s", b.String())
	}
}
