package text

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

// A NaN or infinity that reaches JSON output is an error naming where it
// is, not "json: unsupported value: +Inf" alone.
func TestWriteJSONNamesNonFinite(t *testing.T) {
	r := &model.Report{Findings: []model.Finding{{ID: "x"}, {ID: "y", Evidence: []model.Evidence{{Name: "a", Value: 1}, {Name: "b", Value: math.Inf(1)}}}}}
	var b bytes.Buffer
	err := JSON(&b, r)
	if err == nil || !strings.Contains(err.Error(), ".findings[1].evidence[1].value is +Inf") {
		t.Errorf("JSON = %v, want an error naming .findings[1].evidence[1].value", err)
	}
	m := map[string]map[string]float64{"rows": {"db\x1b": math.NaN()}}
	if err := WriteJSON(&b, m); err == nil || !strings.Contains(err.Error(), `["rows"]["db\x1b"] is NaN`) {
		t.Errorf("WriteJSON = %v", err)
	}
}
