package jsonenc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// same fails t unless MarshalIndent gives what json.MarshalIndent gives:
// the same bytes, or false where it fails.
func same(t *testing.T, name string, v any, prefix, indent string) {
	t.Helper()
	want, werr := json.MarshalIndent(v, prefix, indent)
	got, ok := MarshalIndent(v, prefix, indent)
	switch {
	case werr != nil && ok:
		t.Errorf("%s: encoding/json fails (%v), this wrote %s", name, werr, got)
	case werr == nil && !ok:
		t.Errorf("%s: encoding/json wrote %s, this gave up", name, want)
	case werr == nil && string(got) != string(want):
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

type valueMarshaler struct{ N int }

func (m valueMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(` { "n" : %d, "list": [1, 2, {}], "s": "<&>\u2028" } `, m.N)), nil
}

type ptrMarshaler struct{ N int }

func (m *ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf(`[%d]`, m.N)), nil }

type valueText struct{ S string }

func (m valueText) MarshalText() ([]byte, error) { return []byte("text:" + m.S + "<\n"), nil }

type ptrText struct{ S string }

func (m *ptrText) MarshalText() ([]byte, error) { return []byte("ptr:" + m.S), nil }

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("no") }

type invalid struct{}

func (invalid) MarshalJSON() ([]byte, error) { return []byte(`{"a":`), nil }

type zeroer struct{ N int }

func (z zeroer) IsZero() bool { return z.N < 0 }

type ptrZeroer struct{ N int }

func (z *ptrZeroer) IsZero() bool { return z.N == 7 }

type Inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
	C int    // conflicts with Outer's C (shallower wins)
	D int    `json:"d"`
}

type Other struct {
	D int `json:"d"` // ties with Inner's d at the same depth: both dropped
	E int
}

type inner2 struct {
	Hidden int `json:"hidden"`
	F      float64
}

type Outer struct {
	Inner
	*Other
	inner2
	C       string
	Tagged  int                `json:"renamed"`
	Skip    int                `json:"-"`
	Dash    int                `json:"-,"`   //nolint:staticcheck // the name "-", on purpose
	Bad     int                `json:"a\"b"` //nolint:staticcheck // an invalid name, on purpose
	Punct   int                `json:"<p&q>"`
	private int                //nolint:unused // must not be written
	Iface   any                `json:"iface"`
	Err     error              `json:"err"`
	Z       zeroer             `json:"z,omitzero"`
	PZ      ptrZeroer          `json:"pz,omitzero"`
	PZP     *ptrZeroer         `json:"pzp,omitzero"`
	T       time.Time          `json:"t"`
	TZ      time.Time          `json:"tz,omitzero"`
	VM      valueMarshaler     `json:"vm"`
	PM      ptrMarshaler       `json:"pm"`
	PMP     *ptrMarshaler      `json:"pmp"`
	VT      valueText          `json:"vt"`
	PT      ptrText            `json:"pt"`
	Map     map[string]any     `json:"map"`
	IntMap  map[int64]string   `json:"int_map"`
	TextMap map[valueText]int  `json:"text_map"`
	UMap    map[uint8][]string `json:"umap,omitempty"`
	Bytes   []byte             `json:"bytes"`
	Arr     [3]uint8           `json:"arr"`
	Empty   []int              `json:"empty"`
	Nil     []int              `json:"nil"`
	F32     float32            `json:"f32"`
	NegZ    float64            `json:"negz,omitempty"`
}

func TestKinds(t *testing.T) {
	strs := []string{"", "plain", "quote\" back\\ slash/", "<script>&amp;</script>", "\x00\x01\x08\x0c\x1f\x7f\u0080\u009f",
		"tab\tnl\ncr\r", "\u2028\u2029", "\xff\xfe bad utf-8 \xc3", "é日本語😀", "\xed\xa0\x80 surrogate"}
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	strs = append(strs, all.String())
	for i, s := range strs {
		same(t, fmt.Sprint("string ", i), s, "", "  ")
		same(t, fmt.Sprint("key ", i), map[string]string{s: s}, "", "\t")
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789.125, 5e-324,
		math.MaxFloat64, -math.MaxFloat64, 0.1 + 0.2, 1e-10, 3.4e38}
	for _, f := range floats {
		same(t, fmt.Sprint("float64 ", f), f, "", "  ")
		same(t, fmt.Sprint("float32 ", f), float32(f), "", "  ")
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		same(t, fmt.Sprint("non-finite ", f), []float64{1, f}, "", "  ")
	}
	ints := []any{int8(math.MinInt8), int16(-3), int32(math.MaxInt32), int64(math.MinInt64), uint64(math.MaxUint64), uintptr(7), uint8(255), true, false}
	same(t, "ints", ints, "", "  ")

	o := Outer{Inner: Inner{A: 1, C: 3, D: 4}, Other: &Other{D: 5, E: 6}, inner2: inner2{Hidden: 8, F: 2.5},
		C: "outer", Tagged: 9, Skip: 10, Dash: 11, Bad: 12, Punct: 13, private: 15,
		Iface: map[string]any{"x": []any{1.5, "y", nil, true, map[string]int{"b": 2, "a": 1}}}, Err: errors.New("boom"),
		Z: zeroer{N: -1}, PZ: ptrZeroer{N: 7}, PZP: &ptrZeroer{N: 7},
		T:  time.Date(2026, 11, 28, 23, 1, 2, 345000000, time.FixedZone("x", 3600)),
		VM: valueMarshaler{N: 1}, PM: ptrMarshaler{N: 2}, PMP: &ptrMarshaler{N: 3}, VT: valueText{S: "a&b"}, PT: ptrText{S: "c"},
		Map:    map[string]any{"z": 1, "a": valueMarshaler{N: 4}, "m": ptrMarshaler{N: 5}, "<": &ptrMarshaler{N: 6}, "e": []int{}},
		IntMap: map[int64]string{-1: "minus", 10: "ten", 2: "two"}, TextMap: map[valueText]int{{S: "k"}: 1},
		UMap: map[uint8][]string{3: nil, 1: {"x"}}, Bytes: []byte("bytes\x00\xff"), Arr: [3]uint8{1, 2, 3},
		Empty: []int{}, F32: 1.1, NegZ: math.Copysign(0, -1)}
	same(t, "outer", o, "", "  ")
	same(t, "outer pointer (addressable fields)", &o, "", "  ")
	same(t, "outer with a prefix", &o, ">> ", "\t")
	same(t, "outer in a slice", []Outer{o, {}}, "", "  ")
	same(t, "outer in a map (not addressable)", map[string]Outer{"k": o}, "", "  ")
	same(t, "outer in an interface", []any{o, &o, nil}, "", "  ")
	var nilOuter *Outer
	same(t, "nil pointer", nilOuter, "", "  ")
	same(t, "nil", nil, "", "  ")
	same(t, "empty struct", struct{}{}, "", "  ")
	type quoted struct {
		Str  int     `json:"str,string"`
		F    float64 `json:",string"`
		B    bool    `json:"b,string,omitempty"`
		S    string  `json:"s,string"`
		Keep []int   `json:"keep,string"` //nolint:staticcheck // ignored by encoding/json, on purpose
	}
	same(t, "the string option", []quoted{{Str: 14, F: 1.5, B: true, S: "<x>", Keep: []int{1}}, {}}, "", "  ")
	same(t, "all omitted", struct {
		A int `json:",omitempty"`
	}{}, "", "  ")
	same(t, "failing marshaler", []any{failing{}}, "", "  ")
	same(t, "numbers", map[string]any{"n": json.Number("12.5e3"), "raw": json.RawMessage(` { "a" : [ 1 ] } `),
		"empty": json.Number(""), "nil raw": json.RawMessage(nil)}, "", "  ")
	same(t, "not a number", []json.Number{"1", "x"}, "", "  ")
	same(t, "invalid marshaler", map[string]any{"a": invalid{}}, "", "  ")
	same(t, "time out of range", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "", "  ")
	same(t, "chan", struct{ C chan int }{}, "", "  ")
	same(t, "func in interface", []any{func() {}}, "", "  ")

	type cycle struct {
		Next *cycle `json:"next"`
	}
	c := &cycle{}
	c.Next = c
	same(t, "cycle", c, "", "  ")
	deep := &cycle{}
	for range 2 * maxDepth {
		deep = &cycle{Next: deep}
	}
	// Deeper than this package follows: it defers to encoding/json.
	if _, ok := MarshalIndent(deep, "", ""); ok {
		t.Errorf("a value nested %d deep was encoded, not left to encoding/json", 2*maxDepth)
	}
	shallow := &cycle{}
	for range maxDepth - 2 {
		shallow = &cycle{Next: shallow}
	}
	same(t, "nested just under the bound", shallow, "", " ")
	if _, ok := MarshalIndent(shallow, "", ""); !ok {
		t.Errorf("a value nested %d deep was left to encoding/json", maxDepth-1)
	}
	type list []any
	l := list{1}
	l = append(l, l)
	same(t, "slice in itself", l, "", "  ")
}

// fill sets v (settable) to a random value of its type: each kind's edge
// cases, nil and empty containers, and strings that need escaping.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if r.IntN(3) == 0 {
			v.SetInt(0)
		} else {
			v.SetInt(r.Int64() >> r.IntN(64))
		}
		if r.IntN(2) == 0 {
			v.SetInt(-v.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if r.IntN(3) > 0 {
			v.SetUint(r.Uint64() >> r.IntN(64))
		}
	case reflect.Float32, reflect.Float64:
		f := []float64{0, math.Copysign(0, -1), r.Float64(), r.NormFloat64() * 1e6, r.Float64() * 1e-8, r.ExpFloat64() * 1e22,
			math.Ldexp(r.Float64(), r.IntN(2000)-1000), float64(r.Int32())}[r.IntN(8)]
		if v.Kind() == reflect.Float32 && (math.Abs(f) > math.MaxFloat32) {
			f = 1
		}
		v.SetFloat(f)
	case reflect.String:
		const alphabet = "ab<>&\"\\\n\t\x00\x7f/é日\u2028\xff\x80 "
		var b []byte
		for range r.IntN(12) {
			if r.IntN(4) == 0 {
				b = append(b, byte(r.IntN(256)))
			} else {
				i := r.IntN(len(alphabet))
				b = append(b, alphabet[i])
			}
		}
		v.SetString(string(b))
	case reflect.Pointer:
		if depth > 4 || r.IntN(4) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Interface:
		if v.NumMethod() > 0 || depth > 4 || r.IntN(3) == 0 {
			return
		}
		choices := []any{1.25, "s<", true, nil, []any{}, map[string]any{}, int64(-3)}
		x := choices[r.IntN(len(choices))]
		if s, ok := x.([]any); ok {
			for range r.IntN(3) {
				s = append(s, choices[r.IntN(len(choices))])
			}
			x = s
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Slice:
		if depth > 4 || r.IntN(4) == 0 {
			return
		}
		n := r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i), depth+1)
		}
	case reflect.Map:
		if depth > 4 || r.IntN(4) == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			fill(r, k, depth+1)
			fill(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<35), r.Int64N(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fill(r, f, depth+1)
			}
		}
	}
}

// Random values of the test's type and of every kind, compared with
// encoding/json's.
func TestRandomValues(t *testing.T) {
	types := []reflect.Type{reflect.TypeFor[Outer](), reflect.TypeFor[*Outer](), reflect.TypeFor[[]map[string]*Inner](),
		reflect.TypeFor[map[int8][2]float32](), reflect.TypeFor[[]any]()}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		ty := types[i%len(types)]
		v := reflect.New(ty).Elem()
		fill(r, v, 0)
		same(t, fmt.Sprintf("random %s #%d", ty, i), v.Interface(), "", "  ")
		if t.Failed() {
			return
		}
	}
}

// FuzzValues fills the test's types from the fuzzer's seed.
func FuzzValues(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		v := reflect.New(reflect.TypeFor[Outer]()).Elem()
		fill(r, v, 0)
		same(t, "fuzzed", v.Addr().Interface(), "", "  ")
	})
}

// A document of a few hundred bytes, as WriteJSONArray writes each of a
// fleet's 100,000 items: this package and encoding/json.
func BenchmarkSmallDocument(b *testing.B) {
	type item struct {
		ID    string  `json:"id"`
		Host  string  `json:"host"`
		Value float64 `json:"value"`
		N     []int   `json:"n"`
	}
	v := item{"gc_time_high", "host-00042.example", 12.5, []int{1, 2, 3}}
	b.Run("jsonenc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := MarshalIndent(v, "  ", "  "); !ok {
				b.Fatal("left to encoding/json")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.MarshalIndent(v, "  ", "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Plans are made on first use, by whichever goroutine meets a type first:
// many goroutines writing values of types none has planned yet (recursive,
// nested through pointers, slices and maps) all write what encoding/json
// writes (run under -race, this is the test of that sharing).
func TestPlansMadeAtOnceByManyGoroutines(t *testing.T) {
	type node struct {
		Name string           `json:"name"`
		Kids []*node          `json:"kids,omitempty"`
		By   map[string]*node `json:"by,omitempty"`
		Up   *node            `json:"-"`
	}
	type wrap struct {
		Root  *node  `json:"root"`
		Later []node `json:"later"`
	}
	v := wrap{Root: &node{Name: "a", Kids: []*node{{Name: "b", By: map[string]*node{"c": {Name: "c"}}}}},
		Later: []node{{Name: "d"}}}
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan string, 16)
	for range 16 {
		go func() {
			got, ok := MarshalIndent(v, "", "  ")
			if !ok || string(got) != string(want) {
				errs <- fmt.Sprintf("ok %v:\n%s", ok, got)
				return
			}
			errs <- ""
		}()
	}
	for range 16 {
		if e := <-errs; e != "" {
			t.Errorf("a goroutine wrote %s\nwant\n%s", e, want)
		}
	}
}
