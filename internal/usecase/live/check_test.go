package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/jsonenc"
)

// check on a replayed capture finds what its golden says, with no
// options given (no runtimes, no focus: processes ranked by PSS).
func TestCheckReplayedCapture(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"dying-cgroups", "low-available", "healthy"} {
		capPath := "../../../testdata/captures/" + name + "-6.18-x86_64-hybrid.txtar"
		h, err := OpenHost("", capPath)
		if err != nil {
			t.Fatal(err)
		}
		if h.Live() {
			t.Fatalf("%s: replay taken for the live host", capPath)
		}
		rep, err := Check(context.Background(), h, CheckOptions{Top: 10})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("../../../testdata/golden/check-" + name + "-6.18-x86_64-hybrid.json")
		if err != nil {
			t.Fatal(err)
		}
		goldenFindings, err := findingsOf(b)
		if err != nil {
			t.Fatalf("%s's golden: %v", name, err)
		}
		var got, want []string
		for _, f := range rep.Findings {
			got = append(got, f.ID)
		}
		for _, f := range goldenFindings {
			want = append(want, f.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: findings %v, the golden has %v", name, got, want)
		}
		if rep.Cost != nil {
			t.Errorf("%s: a replay has a cost of reading this host", name)
		}
		for i := 1; i < len(rep.Processes); i++ {
			a, b := rep.Processes[i-1].PSSBytes, rep.Processes[i].PSSBytes
			if a != nil && b != nil && *a < *b {
				t.Errorf("%s: processes not ranked by PSS at %d", name, i)
			}
		}
	}
	if _, err := OpenHost("", "../../../testdata/captures/missing.txtar"); err == nil {
		t.Error("a missing capture opened")
	}
}

// findingsOf reads the "findings" array of a golden check --json. The
// golden keeps the parts that depend on the set of rules as placeholders
// (testdata/golden/README.md), after the findings, so the file is read as
// a stream up to them, not as one JSON value.
func findingsOf(b []byte) ([]struct {
	ID string `json:"id"`
}, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: starts with %v", tok)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key == "findings" {
			var fs []struct {
				ID string `json:"id"`
			}
			return fs, dec.Decode(&fs)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("before the findings: %w", err)
		}
	}
	return nil, errors.New("no findings array")
}

// The report's JSON from jsonenc is encoding/json's, byte for byte, for
// this host read live and for every capture kept.
func TestCheckJSONAsEncodingJSON(t *testing.T) {
	caps, err := filepath.Glob("../../../testdata/captures/*.txtar")
	if err != nil || len(caps) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, capPath := range append([]string{""}, caps...) {
		h, err := OpenHost("", capPath)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Check(context.Background(), h, CheckOptions{Top: 10})
		if err != nil {
			t.Fatalf("%s: %v", capPath, err)
		}
		want, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", capPath, err)
		}
		got, ok := jsonenc.MarshalIndent(rep, "", "  ")
		if !ok {
			t.Fatalf("%s: jsonenc left the report to encoding/json", capPath)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s (\"\" is this host): the two encodings differ at byte %d: %q against encoding/json's %q",
				capPath, i, got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
	}
}

// The report of a capture written as JSON, by jsonenc and by
// encoding/json, once their plans are made (what a first use adds is
// seen in whole runs: bench/check.sh).
func BenchmarkCheckJSON(b *testing.B) {
	h, err := OpenHost("", "../../../testdata/captures/malloc-arenas-6.18-x86_64-hybrid.txtar")
	if err != nil {
		b.Fatal(err)
	}
	rep, err := Check(context.Background(), h, CheckOptions{Top: 10})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("jsonenc", func(b *testing.B) {
		for b.Loop() {
			out, ok := jsonenc.MarshalIndent(rep, "", "  ")
			if !ok {
				b.Fatal("left to encoding/json")
			}
			b.SetBytes(int64(len(out)))
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			out, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
		}
	})
}
