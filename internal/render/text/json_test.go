package text

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/sample"
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

// WriteJSONArray writes, one item at a time, the bytes WriteJSON writes of
// the whole document: nested items, escapes a terminal would act on, HTML
// characters, an embedded report, an empty and a nil list.
func TestWriteJSONArrayWritesWhatWriteJSONWrites(t *testing.T) {
	type item struct {
		Name  string            `json:"name"`
		Tags  map[string]string `json:"tags,omitempty"`
		Parts []int             `json:"parts"`
		Inner *item             `json:"inner,omitempty"`
	}
	type doc struct {
		*model.Report
		Items []item `json:"items"`
		After string `json:"after"`
	}
	items := []item{
		{Name: "db\x9b7 <a&b>", Tags: map[string]string{"z": "1", "a": "\u202e"}, Parts: []int{1, 2}},
		{Name: "web", Inner: &item{Name: "in\"ner", Parts: []int{}}},
		{Name: "é\x7f"},
	}
	rep := &model.Report{Findings: []model.Finding{{ID: "x", Summary: "\n  \"items\": null"}}, Notes: nil}
	for _, list := range [][]item{items, items[:1], {}, nil} {
		var want, got bytes.Buffer
		if err := WriteJSON(&want, doc{Report: rep, Items: list, After: "end"}); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSONArray(&got, doc{Report: rep, After: "end"}, "items", list); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d items: WriteJSONArray wrote\n%s\nWriteJSON writes\n%s", len(list), got.String(), want.String())
		}
	}
	// The path of a NaN in an item names the item.
	bad := []struct {
		V float64 `json:"v"`
	}{{1}, {math.NaN()}}
	err := WriteJSONArray(&bytes.Buffer{}, doc{Report: rep}, "items", bad)
	if err == nil || !strings.Contains(err.Error(), ".items[1].v is NaN") {
		t.Errorf("WriteJSONArray = %v, want an error naming .items[1].v", err)
	}
	// A document without the field is an error, not a document without the list.
	if err := WriteJSONArray(&bytes.Buffer{}, rep, "items", items); err == nil {
		t.Error("WriteJSONArray into a document without the field: no error")
	}
}

// WriteJSONLists writes, one item at a time, the bytes WriteJSON writes of
// a document with several lists, given in any order: an embedded report's
// findings and notes, and a list of the document's own after them.
func TestWriteJSONListsWritesWhatWriteJSONWrites(t *testing.T) {
	type doc struct {
		*model.Report
		Items []string `json:"items"`
	}
	full := &model.Report{
		Findings: []model.Finding{{ID: "x", Summary: "a \x9b b"}, {ID: "y", Summary: "\n  \"notes\": null"}},
		Notes:    []sample.Note{{Source: strings.Repeat("long ", 1000), Message: "m\u202e"}, {Source: "s"}},
	}
	for _, items := range [][]string{{"one", "two <&>"}, {}, nil} {
		var want, got bytes.Buffer
		if err := WriteJSON(&want, doc{Report: full, Items: items}); err != nil {
			t.Fatal(err)
		}
		head := *full
		head.Findings, head.Notes = nil, nil
		if err := WriteJSONLists(&got, doc{Report: &head},
			ListOf("items", items), ListOf("notes", full.Notes), ListOf("findings", full.Findings)); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d items: WriteJSONLists wrote\n%s\nWriteJSON writes\n%s", len(items), got.String(), want.String())
		}
	}
	if err := WriteJSONLists(&bytes.Buffer{}, doc{Report: full}, ListOf("notes", full.Notes)); err == nil {
		t.Error("WriteJSONLists into a document whose field is not null: no error")
	}
}
