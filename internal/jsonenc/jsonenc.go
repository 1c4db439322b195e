// Package jsonenc writes a Go value as indented JSON: the same bytes as
// encoding/json's MarshalIndent, at a fraction of its cost on first use.
//
// encoding/json works out, the first time it meets a type, how to encode
// it: for each struct it lists, sorts and resolves the fields, escapes
// their names three ways and builds an encoder for each, then writes the
// document compact and indents it in a second pass. A command run once
// (`memdoctor check --json`) meets every type of its report for the first
// time, and that work was a twelfth of the command's CPU. This package
// keeps a smaller plan per type (the fields in order, each key already
// quoted, an encoder per field) and writes the indentation as it goes.
//
// It follows encoding/json's rules: field names, tags and omitempty,
// omitzero and IsZero, embedded structs and which of two fields of one
// name wins, Marshaler and TextMarshaler (value and pointer receivers,
// addressable or not), map keys sorted, HTML-safe strings, floats as
// ECMAScript numbers, []byte as base64. What it does not do itself (the
// ",string" option, map keys that are TextMarshalers, interfaces with
// methods, json.Number) it hands, value by value, to encoding/json and indents the
// answer in place. Where encoding/json would fail (NaN, infinity, a
// Marshaler's error or invalid output, a cycle) MarshalIndent says so
// (ok false) and the caller asks encoding/json, which names the error.
// The package's tests compare its output with encoding/json's on every
// kind of value and on random ones.
package jsonenc

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Viewer is a type whose JSON is that of another value: its MarshalJSON
// must be json.Marshal(v.JSONView()). A type that shapes its JSON in a
// MarshalJSON of its own implements it so that this package encodes the
// view with its plans instead of calling encoding/json for it.
type Viewer interface{ JSONView() any }

// maxDepth bounds the nesting this package follows; deeper (or a cycle)
// goes to encoding/json, which detects cycles.
const maxDepth = 500

// MarshalIndent returns what json.MarshalIndent(v, prefix, indent) returns,
// and true; or false where encoding/json would return an error (the caller
// then calls it for the error).
func MarshalIndent(v any, prefix, indent string) ([]byte, bool) {
	// A small first buffer: WriteJSONArray writes documents of 100,000
	// items one item at a time, most of them a few hundred bytes.
	return AppendIndent(make([]byte, 0, 512), v, prefix, indent)
}

// AppendIndent is MarshalIndent appending to dst (a caller that knows the
// document is large gives room for it: grown from 512 bytes, a 35 KB
// report was eight buffers).
func AppendIndent(dst []byte, v any, prefix, indent string) ([]byte, bool) {
	e := state{prefix: prefix, indent: indent, b: dst}
	if !e.value(reflect.ValueOf(v)) {
		return nil, false
	}
	return e.b, true
}

type state struct {
	b              []byte
	prefix, indent string
	depth          int // of objects and arrays
	ptrs           int // pointers and interfaces followed, for cycles of pointers alone
}

type encoder func(e *state, v reflect.Value) bool

func (e *state) value(v reflect.Value) bool {
	if !v.IsValid() {
		e.b = append(e.b, "null"...)
		return true
	}
	return typeEncoder(v.Type())(e, v)
}

// open starts an object or array whose first element follows.
func (e *state) open(c byte) bool {
	e.depth++
	if e.depth > maxDepth {
		return false
	}
	e.b = append(e.b, c)
	e.newline()
	return true
}

func (e *state) next() {
	e.b = append(e.b, ',')
	e.newline()
}

func (e *state) close(c byte) {
	e.depth--
	e.newline()
	e.b = append(e.b, c)
}

func (e *state) newline() {
	e.b = append(e.b, '\n')
	e.b = append(e.b, e.prefix...)
	for range e.depth {
		e.b = append(e.b, e.indent...)
	}
}

// raw appends JSON that a Marshaler or encoding/json wrote: compacted,
// HTML-escaped and indented at the current depth, as encoding/json does
// with a Marshaler's output.
func (e *state) raw(out []byte) bool {
	var c, h bytes.Buffer
	if json.Compact(&c, out) != nil {
		return false
	}
	json.HTMLEscape(&h, c.Bytes())
	b := bytes.NewBuffer(e.b)
	if json.Indent(b, h.Bytes(), e.prefix+strings.Repeat(e.indent, e.depth), e.indent) != nil {
		return false
	}
	e.b = b.Bytes()
	return true
}

var encoders sync.Map // reflect.Type -> encoder

func typeEncoder(t reflect.Type) encoder {
	if f, ok := encoders.Load(t); ok {
		return f.(encoder)
	}
	// Making a plan never makes another type's (each field, element and
	// pointer target is planned on first use, lazy below): a recursive
	// type needs no placeholder, and two goroutines that plan one type at
	// once keep the first plan stored.
	f, _ := encoders.LoadOrStore(t, newTypeEncoder(t, true))
	return f.(encoder)
}

// lazy is the encoder of a type that a value may never hold (the
// element of a slice that is empty, the target of a pointer that is nil,
// a field that omitempty leaves out): its plan is made the first time a
// value needs it. A report meets far fewer types than its declaration
// names, and each plan not made is reflection a run does not pay for.
type lazy struct {
	t   reflect.Type
	enc atomic.Pointer[encoder]
}

func newLazy(t reflect.Type) *lazy { return &lazy{t: t} }

func (l *lazy) get() encoder {
	if p := l.enc.Load(); p != nil {
		return *p
	}
	f := typeEncoder(l.t)
	l.enc.Store(&f)
	return f
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	viewerType        = reflect.TypeFor[Viewer]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
	timeType          = reflect.TypeFor[time.Time]()
	numberType        = reflect.TypeFor[json.Number]()
)

// newTypeEncoder chooses as encoding/json does: a pointer receiver's
// Marshaler when the value is addressable, the value's Marshaler, the
// same for TextMarshaler, then the kind.
func newTypeEncoder(t reflect.Type, allowAddr bool) encoder {
	if t == timeType {
		return timeEnc
	}
	if t == numberType {
		return fallbackEnc // written as the number it holds, or an error
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(viewerType) {
		return viewEnc
	}
	if t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(marshalerType) {
		return condAddr(addrMarshalerEnc, newTypeEncoder(t, false))
	}
	if t.Implements(marshalerType) {
		if t.Kind() == reflect.Interface {
			return fallbackEnc
		}
		return marshalerEnc
	}
	if t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(textMarshalerType) {
		return condAddr(addrTextMarshalerEnc, newTypeEncoder(t, false))
	}
	if t.Implements(textMarshalerType) {
		if t.Kind() == reflect.Interface {
			return fallbackEnc
		}
		return textMarshalerEnc
	}
	switch t.Kind() {
	case reflect.Bool:
		return boolEnc
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intEnc
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintEnc
	case reflect.Float32:
		return float32Enc
	case reflect.Float64:
		return float64Enc
	case reflect.String:
		return stringEnc
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return fallbackEnc
		}
		return interfaceEnc
	case reflect.Struct:
		return newStructEncoder(t)
	case reflect.Map:
		return newMapEncoder(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p := reflect.PointerTo(t.Elem())
			if !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
				return bytesEnc
			}
		}
		return newArrayEncoder(t, true)
	case reflect.Array:
		return newArrayEncoder(t, false)
	case reflect.Pointer:
		elem := newLazy(t.Elem())
		return func(e *state, v reflect.Value) bool {
			if v.IsNil() {
				e.b = append(e.b, "null"...)
				return true
			}
			if e.ptrs++; e.ptrs > maxDepth {
				return false
			}
			ok := elem.get()(e, v.Elem())
			e.ptrs--
			return ok
		}
	}
	return func(*state, reflect.Value) bool { return false } // chan, func, complex: encoding/json's error
}

func condAddr(ifAddr, otherwise encoder) encoder {
	return func(e *state, v reflect.Value) bool {
		if v.CanAddr() {
			return ifAddr(e, v)
		}
		return otherwise(e, v)
	}
}

// fallbackEnc asks encoding/json for v, for what this package does not do
// itself.
func fallbackEnc(e *state, v reflect.Value) bool {
	if !v.CanInterface() {
		return false
	}
	x := v.Interface()
	if v.CanAddr() && v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface {
		x = v.Addr().Interface() // a pointer receiver's Marshaler, as in place
	}
	out, err := json.Marshal(x)
	if err != nil {
		return false
	}
	return e.raw(out)
}

func timeEnc(e *state, v reflect.Value) bool {
	if !v.CanInterface() {
		return false
	}
	out, err := v.Interface().(time.Time).MarshalJSON()
	if err != nil {
		return false
	}
	e.b = append(e.b, out...) // a quoted RFC 3339 time: nothing to escape or indent
	return true
}

func viewEnc(e *state, v reflect.Value) bool {
	if !v.CanInterface() {
		return false
	}
	return e.value(reflect.ValueOf(v.Interface().(Viewer).JSONView()))
}

func marshalerEnc(e *state, v reflect.Value) bool {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.b = append(e.b, "null"...)
		return true
	}
	if !v.CanInterface() {
		return false
	}
	out, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return false
	}
	return e.raw(out)
}

// addrMarshalerEnc is a pointer receiver's MarshalJSON on an addressable
// value.
func addrMarshalerEnc(e *state, v reflect.Value) bool { return marshalerEnc(e, v.Addr()) }

func textMarshalerEnc(e *state, v reflect.Value) bool {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.b = append(e.b, "null"...)
		return true
	}
	if !v.CanInterface() {
		return false
	}
	out, err := v.Interface().(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return false
	}
	e.b = appendString(e.b, out)
	return true
}

// addrTextMarshalerEnc is a pointer receiver's MarshalText on an
// addressable value.
func addrTextMarshalerEnc(e *state, v reflect.Value) bool { return textMarshalerEnc(e, v.Addr()) }

func boolEnc(e *state, v reflect.Value) bool {
	e.b = strconv.AppendBool(e.b, v.Bool())
	return true
}

func intEnc(e *state, v reflect.Value) bool {
	e.b = strconv.AppendInt(e.b, v.Int(), 10)
	return true
}

func uintEnc(e *state, v reflect.Value) bool {
	e.b = strconv.AppendUint(e.b, v.Uint(), 10)
	return true
}

func float32Enc(e *state, v reflect.Value) bool { return e.float(v.Float(), 32) }
func float64Enc(e *state, v reflect.Value) bool { return e.float(v.Float(), 64) }

// float writes f as an ECMAScript number, as encoding/json does: %f
// between 1e-6 and 1e21, else an exponent without a leading zero.
func (e *state) float(f float64, bits int) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, bits)
	if format == 'e' {
		if n := len(e.b); n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
	return true
}

func stringEnc(e *state, v reflect.Value) bool {
	e.b = appendString(e.b, v.String())
	return true
}

func bytesEnc(e *state, v reflect.Value) bool {
	if v.IsNil() {
		e.b = append(e.b, "null"...)
		return true
	}
	e.b = append(e.b, '"')
	e.b = base64.StdEncoding.AppendEncode(e.b, v.Bytes())
	e.b = append(e.b, '"')
	return true
}

func interfaceEnc(e *state, v reflect.Value) bool {
	if v.IsNil() {
		e.b = append(e.b, "null"...)
		return true
	}
	if e.ptrs++; e.ptrs > maxDepth {
		return false
	}
	ok := e.value(v.Elem())
	e.ptrs--
	return ok
}

func newArrayEncoder(t reflect.Type, slice bool) encoder {
	lz := newLazy(t.Elem())
	return func(e *state, v reflect.Value) bool {
		if slice && v.IsNil() {
			e.b = append(e.b, "null"...)
			return true
		}
		n := v.Len()
		if n == 0 {
			e.b = append(e.b, "[]"...)
			return true
		}
		if !e.open('[') {
			return false
		}
		elem := lz.get()
		for i := range n {
			if i > 0 {
				e.next()
			}
			if !elem(e, v.Index(i)) {
				return false
			}
		}
		e.close(']')
		return true
	}
}

func newMapEncoder(t reflect.Type) encoder {
	switch t.Key().Kind() {
	case reflect.String:
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if t.Key().Implements(textMarshalerType) {
			return fallbackEnc // encoding/json names such keys by MarshalText
		}
	default:
		return fallbackEnc
	}
	lz := newLazy(t.Elem())
	type kv struct {
		k string
		v reflect.Value
	}
	return func(e *state, v reflect.Value) bool {
		if v.IsNil() {
			e.b = append(e.b, "null"...)
			return true
		}
		if v.Len() == 0 {
			e.b = append(e.b, "{}"...)
			return true
		}
		kvs := make([]kv, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := it.Key()
			var s string
			switch k.Kind() {
			case reflect.String:
				s = k.String()
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				s = strconv.FormatInt(k.Int(), 10)
			default:
				s = strconv.FormatUint(k.Uint(), 10)
			}
			kvs = append(kvs, kv{s, it.Value()})
		}
		slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		if !e.open('{') {
			return false
		}
		elem := lz.get()
		for i, x := range kvs {
			if i > 0 {
				e.next()
			}
			e.b = appendString(e.b, x.k)
			e.b = append(e.b, ':', ' ')
			if !elem(e, x.v) {
				return false
			}
		}
		e.close('}')
		return true
	}
}

// field is one key of a struct's object.
type field struct {
	name      string
	key       string // the name quoted and HTML-escaped, then ": "
	tagged    bool
	index     []int
	omitEmpty bool
	omitZero  bool
	quoted    bool
	isZero    func(reflect.Value) bool
	typ       reflect.Type // the field's, whose encoder is made on first use
}

func newStructEncoder(t reflect.Type) encoder {
	fields := structFields(t)
	for i := range fields {
		if fields[i].quoted {
			return fallbackEnc
		}
	}
	encs := make([]lazy, len(fields))
	for i := range fields {
		encs[i].t = fields[i].typ
	}
	return func(e *state, v reflect.Value) bool {
		n := 0
	fields:
		for i := range fields {
			f := &fields[i]
			fv := v
			for _, x := range f.index {
				if fv.Kind() == reflect.Pointer {
					if fv.IsNil() {
						continue fields
					}
					fv = fv.Elem()
				}
				fv = fv.Field(x)
			}
			if f.omitEmpty && isEmpty(fv) || f.omitZero && (f.isZero == nil && fv.IsZero() || f.isZero != nil && f.isZero(fv)) {
				continue
			}
			if n == 0 {
				if !e.open('{') {
					return false
				}
			} else {
				e.next()
			}
			n++
			e.b = append(e.b, f.key...)
			if !encs[i].get()(e, fv) {
				return false
			}
		}
		if n == 0 {
			e.b = append(e.b, "{}"...)
		} else {
			e.close('}')
		}
		return true
	}
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// structFields lists the keys of t's object in order. A struct that
// embeds none and whose names are all different (most of them) has its
// fields in order; any other goes through embeddedFields.
func structFields(t reflect.Type) []field {
	n := t.NumField()
	fields := make([]field, 0, n)
	index := make([]int, n)
	for i := range n {
		sf := t.Field(i)
		if sf.Anonymous {
			return embeddedFields(t)
		}
		if !sf.IsExported() {
			continue
		}
		index[i] = i
		if f, ok := newField(sf, index[i:i+1]); ok {
			fields = append(fields, f)
		}
	}
	for i := range fields {
		for j := i + 1; j < len(fields); j++ {
			if fields[i].name == fields[j].name {
				return embeddedFields(t)
			}
		}
	}
	return fields
}

// needsHTMLEscape says whether s holds <, >, & or (perhaps) U+2028 or
// U+2029, which encoding/json escapes in a key.
func needsHTMLEscape(s string) bool {
	for i := range len(s) {
		if c := s[i]; c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// newField is the key sf gives at index, false for a field tagged "-".
func newField(sf reflect.StructField, index []int) (field, bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return field{}, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if !validTag(name) {
		name = ""
	}
	f := field{name: name, tagged: name != "", index: index, typ: sf.Type,
		omitEmpty: hasOpt(opts, "omitempty"), omitZero: hasOpt(opts, "omitzero")}
	if f.name == "" {
		f.name = sf.Name
	}
	ft := sf.Type
	if ft.Name() == "" && ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if hasOpt(opts, "string") {
		switch ft.Kind() {
		case reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.String:
			f.quoted = true
		}
	}
	if needsHTMLEscape(f.name) {
		var h bytes.Buffer
		json.HTMLEscape(&h, []byte(f.name))
		f.key = `"` + h.String() + `": `
	} else {
		f.key = `"` + f.name + `": `
	}
	if f.omitZero {
		f.isZero = zeroFunc(sf.Type)
	}
	return f, true
}

// embeddedFields lists the keys of t's object by Go's rules for embedded
// fields as encoding/json applies them: a struct embedded without a tag
// gives its fields to the outer one, breadth first; of two fields of one
// name the shallower wins, then the tagged one, and two that still tie
// are both left out.
func embeddedFields(t reflect.Type) []field {
	type level struct {
		typ   reflect.Type
		index []int
	}
	var (
		fields           []field
		next             = []level{{typ: t}}
		count, nextCount map[reflect.Type]int
		visited          = map[reflect.Type]bool{}
		current          []level
	)
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				index := append(append(make([]int, 0, len(l.index)+1), l.index...), i)
				f, ok := newField(sf, index)
				if !ok {
					continue
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if f.tagged || !sf.Anonymous || ft.Kind() != reflect.Struct {
					fields = append(fields, f)
					if count[l.typ] > 1 {
						fields = append(fields, f) // two paths to it: a tie
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, level{typ: ft, index: index})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if j-i == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

func hasOpt(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// validTag is encoding/json's test of a tag's name: letters, digits and
// punctuation other than quotes and backslash.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' {
			continue
		}
		if strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) {
			continue
		}
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// zeroFunc is omitzero's test for a field of type t with an IsZero method
// (nil when it has none: reflect's zero).
func zeroFunc(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil() ||
				v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.Interface().(interface{ IsZero() bool }).IsZero() }
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				v = c
			}
			return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	return nil
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json writes it:
// HTML's <, > and & escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString[S []byte | string](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		r, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
