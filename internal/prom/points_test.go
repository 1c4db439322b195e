package prom

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/prometheus/common/model"
)

// The fast pair decoder agrees with prometheus/common's on what both
// accept.
func TestPointsAgree(t *testing.T) {
	for _, s := range []string{
		`[]`, ` [ ] `, `[[1,"1"]]`, `[[1794003900.123,"68719476736"],[1794004200,"-1.5e-3"]]`,
		`[[1,"NaN"],[2,"+Inf"],[3,"-Inf"]]`, "[\n [1, \"2\"] ,\n[3,\"4\"]\n]", `[[1.5,"1"],[2,"x"]]`, `[[1,2]]`, `{}`,
	} {
		var fast points
		var ref []model.SamplePair
		errF := json.Unmarshal([]byte(s), &fast)
		errR := json.Unmarshal([]byte(s), &ref)
		if (errF == nil) != (errR == nil) {
			t.Errorf("%s: fast %v, reference %v", s, errF, errR)
			continue
		}
		if errF != nil {
			continue
		}
		if len(fast) != len(ref) {
			t.Fatalf("%s: %d vs %d pairs", s, len(fast), len(ref))
		}
		for i := range ref {
			a, b := fast[i], ref[i]
			if a.Timestamp != b.Timestamp || (a.Value != b.Value && !(math.IsNaN(float64(a.Value)) && math.IsNaN(float64(b.Value)))) {
				t.Errorf("%s: pair %d: %v vs %v", s, i, a, b)
			}
		}
	}
}

func BenchmarkPoints(b *testing.B) {
	buf := []byte("[")
	for i := range 4000 {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `[1794003900.5,"68719476736"]`...)
	}
	buf = append(buf, ']')
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for range b.N {
			var p points
			if err := json.Unmarshal(buf, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for range b.N {
			var p []model.SamplePair
			if err := json.Unmarshal(buf, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzPoints: the fast decoder never panics and, when it accepts, agrees
// with the reference decoder.
func FuzzPoints(f *testing.F) {
	for _, s := range []string{`[]`, `[[1,"1"]]`, `[[1794003900.123,"6.8e10"],[2,"NaN"]]`, `[[1,"\u0031"]]`, `[[1e400,"1"]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// encoding/json validates a document before it calls an
		// UnmarshalJSON, so only valid JSON ever reaches the decoder.
		if !json.Valid(b) {
			return
		}
		out, ok := parsePairs(b)
		if !ok {
			return
		}
		var ref []model.SamplePair
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("fast accepted %q, reference: %v", b, err)
		}
		if len(ref) != len(out) {
			t.Fatalf("%q: %d vs %d", b, len(out), len(ref))
		}
		for i := range ref {
			if out[i].Timestamp != ref[i].Timestamp || (out[i].Value != ref[i].Value && !math.IsNaN(float64(out[i].Value))) {
				t.Fatalf("%q: pair %d: %v vs %v", b, i, out[i], ref[i])
			}
		}
	})
}
