package text

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// WriteJSON writes v as indented JSON. Strings are exact; DEL and C1
// characters in them are written as \u escapes, so a terminal showing the
// document does not act on them. JSON has no NaN or infinity: a value that
// is one is an error naming where it is (sources drop such samples, so one
// here is a bug to report).
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		var uv *json.UnsupportedValueError
		if errors.As(err, &uv) {
			if p := nonFinitePath(reflect.ValueOf(v), "", 0); p != "" {
				return fmt.Errorf("writing JSON: %s is %s, which JSON cannot hold: %w", p, uv.Str, err)
			}
		}
		return fmt.Errorf("writing JSON: %w", err)
	}
	_, err = w.Write(append(termsafe.JSON(b), '\n'))
	return err
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
