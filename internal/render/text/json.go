package text

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/jsonenc"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// WriteJSON writes v as indented JSON. Strings are exact; DEL and C1
// characters in them are written as \u escapes, so a terminal showing the
// document does not act on them. JSON has no NaN or infinity: a value that
// is one is an error naming where it is (sources drop such samples, so one
// here is a bug to report).
func WriteJSON(w io.Writer, v any) error {
	// One document, written whole: room for a check report (35 KB on a
	// quiet host) at once; pages left unused are never touched.
	b, ok := jsonenc.AppendIndent(make([]byte, 0, 64<<10), v, "", "  ")
	if !ok {
		var err error
		if b, err = marshalJSON(v, "", nil); err != nil {
			return err
		}
	}
	_, err := w.Write(append(termsafe.JSON(b), '\n'))
	return err
}

// marshalJSON is v as indented JSON, its lines after the first starting
// with prefix; a NaN or infinity in it is an error naming where (path,
// when given, says where v is in the document).
func marshalJSON(v any, prefix string, path func() string) ([]byte, error) {
	if b, ok := jsonenc.MarshalIndent(v, prefix, "  "); ok {
		return b, nil
	}
	// encoding/json writes the same bytes, and names the error when
	// there is one.
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		var uv *json.UnsupportedValueError
		if errors.As(err, &uv) {
			at := ""
			if path != nil {
				at = path() // made only here: a Sprintf for each of 100,000 items was a fortieth of diagnosing them
			}
			if p := nonFinitePath(reflect.ValueOf(v), at, 0); p != "" {
				return nil, fmt.Errorf("writing JSON: %s is %s, which JSON cannot hold: %w", p, uv.Str, err)
			}
		}
		return nil, fmt.Errorf("writing JSON: %w", err)
	}
	return b, nil
}

// WriteJSONArray writes what WriteJSON writes of v with items as the value
// of its top-level field key, which v must have and marshal as null (a nil
// slice): the items are marshalled one at a time, so that a document
// listing a hundred thousand (16 MB of JSON) is never held whole, nor
// twice while it is indented.
func WriteJSONArray[T any](w io.Writer, v any, key string, items []T) error {
	if items == nil {
		return WriteJSONEach[T](w, v, key, nil)
	}
	return WriteJSONEach(w, v, key, func(fn func(T) error) error {
		for _, it := range items {
			if err := fn(it); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteJSONEach is WriteJSONArray of the items each gives its function in
// turn (read back from a file, say), each written as it comes; nil each
// writes null.
func WriteJSONEach[T any](w io.Writer, v any, key string, each func(func(T) error) error) error {
	return WriteJSONLists(w, v, EachOf(key, each))
}

// JSONList is a top-level field of a document whose items are written one
// at a time (WriteJSONLists).
type JSONList struct {
	Key string
	// Each gives its function each item in turn; nil writes null.
	Each func(func(any) error) error
}

// ListOf is the JSONList of items (nil: null).
func ListOf[T any](key string, items []T) JSONList {
	if items == nil {
		return JSONList{Key: key}
	}
	return JSONList{Key: key, Each: func(fn func(any) error) error {
		for _, it := range items {
			if err := fn(it); err != nil {
				return err
			}
		}
		return nil
	}}
}

// EachOf is the JSONList of the items each gives its function (nil: null).
func EachOf[T any](key string, each func(func(T) error) error) JSONList {
	if each == nil {
		return JSONList{Key: key}
	}
	return JSONList{Key: key, Each: func(fn func(any) error) error {
		return each(func(it T) error { return fn(it) })
	}}
}

// WriteJSONLists is WriteJSONArray of several top-level fields, each of
// which v must marshal as null: no document is held whole, and an item
// only while it is written.
func WriteJSONLists(w io.Writer, v any, lists ...JSONList) error {
	head, err := marshalJSON(v, "", nil)
	if err != nil {
		return err
	}
	type splice struct {
		at   int // where the list's null is in head
		list JSONList
	}
	var at []splice
	for _, l := range lists {
		mark := []byte("\n  \"" + l.Key + "\": null")
		i := bytes.Index(head, mark)
		if i < 0 {
			return fmt.Errorf("writing JSON: no top-level %q of null to write the list into", l.Key)
		}
		if l.Each != nil {
			at = append(at, splice{i + len(mark) - len("null"), l})
		}
	}
	if len(at) == 0 {
		_, err = w.Write(append(termsafe.JSON(head), '\n'))
		return err
	}
	sort.Slice(at, func(i, j int) bool { return at[i].at < at[j].at })
	bw := bufio.NewWriterSize(w, 64<<10)
	last := 0
	for _, sp := range at {
		_, _ = bw.Write(termsafe.JSON(head[last:sp.at]))
		_ = bw.WriteByte('[')
		j := 0
		err = sp.list.Each(func(it any) error {
			b, err := marshalJSON(it, "    ", func() string { return fmt.Sprintf(".%s[%d]", sp.list.Key, j) })
			if err != nil {
				return err
			}
			if j > 0 {
				_ = bw.WriteByte(',')
			}
			_, _ = bw.WriteString("\n    ")
			_, _ = bw.Write(termsafe.JSON(b))
			j++
			return nil
		})
		if err != nil {
			return err
		}
		if j > 0 {
			_, _ = bw.WriteString("\n  ")
		}
		_ = bw.WriteByte(']')
		last = sp.at + len("null")
	}
	_, _ = bw.Write(termsafe.JSON(head[last:]))
	_ = bw.WriteByte('\n')
	return bw.Flush()
}

// nonFinitePath returns the JSON path (.findings[2].evidence[0].value) of
// the first NaN or infinite number in v, or "".
func nonFinitePath(v reflect.Value, path string, depth int) string {
	if depth > 32 || !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			if path == "" {
				return "the value"
			}
			return path
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinitePath(v.Elem(), path, depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p := nonFinitePath(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1); p != "" {
				return p
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			if p := nonFinitePath(v.MapIndex(k), fmt.Sprintf("%s[%q]", path, fmt.Sprint(k)), depth+1); p != "" {
				return p
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if p := nonFinitePath(v.Field(i), path+"."+name, depth+1); p != "" {
				return p
			}
		}
	}
	return ""
}
