package prom

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

func matrixOf(values string) string {
	return `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":` + values + `}]}}`
}

// The streaming decoder agrees with prometheus/common's on the points of
// what both accept.
func TestPointsAgree(t *testing.T) {
	for _, s := range []string{
		`[]`, ` [ ] `, `[[1,"1"]]`, `[[1794003900.123,"68719476736"],[1794004200,"-1.5e-3"]]`,
		`[[1,"NaN"],[2,"+Inf"],[3,"-Inf"]]`, "[\n [1, \"2\"] ,\n[3,\"4\"]\n]", `[[1.5,"1"],[2,"x"]]`, `[[1,2]]`, `{}`,
		`[[-1.5,"1"],[0.25,"2"]]`,
	} {
		a, errF := decodeAnswer(strings.NewReader(matrixOf(s)), 1000, "q")
		var ref []model.SamplePair
		errR := json.Unmarshal([]byte(s), &ref)
		if (errF == nil) != (errR == nil) {
			t.Errorf("%s: stream %v, reference %v", s, errF, errR)
			continue
		}
		if errF != nil {
			continue
		}
		var got []Point
		if len(a.Series) > 0 {
			got = a.Series[0].Points
		}
		samePoints(t, s, got, ref)
	}
}

func samePoints(t testing.TB, what string, got []Point, ref []model.SamplePair) {
	t.Helper()
	if len(got) != len(ref) {
		t.Fatalf("%s: %d vs %d pairs", what, len(got), len(ref))
	}
	for i := range ref {
		a, b := got[i], ref[i]
		if a.T != int64(b.Timestamp) || (a.V != float64(b.Value) && !(math.IsNaN(a.V) && math.IsNaN(float64(b.Value)))) {
			t.Fatalf("%s: pair %d: %v vs %v", what, i, a, b)
		}
	}
}

func BenchmarkPoints(b *testing.B) {
	buf := []byte("[")
	for i := range 4000 {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `[`...)
		buf = append(buf, []byte(model.Time(1794003900500+int64(i)*15000).String())...)
		buf = append(buf, `,"68719476736"]`...)
	}
	buf = append(buf, ']')
	doc := []byte(matrixOf(string(buf)))
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			if _, err := decodeAnswer(bytes.NewReader(doc), 5000, "q"); err != nil {
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

// FuzzPoints: the streaming decoder never panics and, when it and the
// reference decoder accept points in time order, they agree.
func FuzzPoints(f *testing.F) {
	for _, s := range []string{`[]`, `[[1,"1"]]`, `[[1794003900.123,"6.8e10"],[2,"NaN"]]`, `[[1,"\u0031"]]`, `[[1e400,"1"]]`,
		`[[1,"1"],[1,"2"],[1,"3"]]`, `[[2,"1"],[1,"2"]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc := matrixOf(string(b))
		a, err := decodeAnswer(strings.NewReader(doc), 1<<20, "q")
		if err != nil || !json.Valid([]byte(doc)) {
			return
		}
		var ref []model.SamplePair
		if err := json.Unmarshal(b, &ref); err != nil {
			return
		}
		for i := 1; i < len(ref); i++ {
			if ref[i].Timestamp <= ref[i-1].Timestamp {
				return // repeats and disorder are dropped: compared in TestAnswerRepeatsHeldOnce
			}
		}
		var got []Point
		if len(a.Series) > 0 {
			got = a.Series[0].Points
		}
		samePoints(t, string(b), got, ref)
	})
}
