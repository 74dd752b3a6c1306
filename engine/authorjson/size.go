// Package authorjson sizes and writes author values as JSON: the values
// an execution's expressions and nodes made, on their way out of the
// engine (a code node's input, a distributed map's batch, a traced value,
// what an SDK or net/http will write of a request). A value is sized as it
// will be written, escapes counted, walking no further than its bound
// (SizeWithin), before anything is allocated; then written once (Append),
// into a buffer of that size. Charging those bytes to an execution's memory
// budget between the two is the engine's (encodeAuthor): this package
// holds no state and knows no execution.
package authorjson

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// SizeWithin reports how many bytes Append writes of v (as
// encoding/json with HTML escaping off: <, > and & are one byte), walking
// no further than limit: it returns (n, true) when n <= limit, and
// (m, false) for some m > limit as soon as the walk passes it.
//
// Node outputs are counted in the memory budget by their bytes in memory,
// but JSON can take six times as many (a control character is \u0001),
// and the value is encoded whole before its size is known: 39 outputs of
// 3 MB of them, inside the budget, made a 749 MB result on its way to a
// stream that allows 20 MB. Every element costs at least one byte, so the
// walk stops after limit of them at most, whatever the value's shape (a
// value sharing its parts is a tree of far more elements than it holds).
//
// A value nested deeper than MaxDepth is reported as over the limit
// too: encoding/json refuses to write it (json.RawMessage is checked to
// that depth), as every decoder built on it refuses to read it.
func SizeWithin(v any, limit int64) (n int64, fits, deep bool) {
	s := sizeWalk{limit: limit}
	s.value(reflect.ValueOf(v), v)
	return s.n, s.n <= limit && !s.deep, s.deep
}

// MaxDepth is encoding/json's bound on nesting.
const MaxDepth = 10_000

type sizeWalk struct {
	n, limit int64
	depth    int
	deep     bool
	num      [32]byte
}

func (s *sizeWalk) over() bool { return s.n > s.limit || s.deep }

// enter counts one level down, and reports whether the walk may go on.
func (s *sizeWalk) enter() bool {
	s.depth++
	// The event's own object is one level more.
	if s.depth >= MaxDepth {
		s.deep = true
	}
	return !s.deep
}

// value adds the size of v (rv when v's dynamic type is none of the JSON
// decoder's).
func (s *sizeWalk) value(rv reflect.Value, v any) {
	if s.over() {
		return
	}
	switch v := v.(type) {
	case nil:
		s.n += 4
		return
	case string:
		s.n += stringSize(v)
		return
	case float64:
		s.n += int64(s.floatSize(v))
		return
	case bool:
		s.n += 5
		return
	case json.Number:
		s.n += int64(len(v))
		return
	case json.RawMessage:
		s.n += int64(len(v))
		return
	case []any:
		s.n += 2 + int64(max(len(v)-1, 0))
		defer func() { s.depth-- }()
		if !s.enter() {
			return
		}
		for _, e := range v {
			if s.over() {
				return
			}
			s.value(reflect.Value{}, e)
		}
		return
	case map[string]any:
		s.n += 2 + int64(max(len(v)-1, 0))
		defer func() { s.depth-- }()
		if !s.enter() {
			return
		}
		for k, e := range v {
			if s.over() {
				return
			}
			s.n += stringSize(k) + 1
			s.value(reflect.Value{}, e)
		}
		return
	}
	if !rv.IsValid() {
		rv = reflect.ValueOf(v)
	}
	s.reflected(rv)
}

// reflected sizes what expr-lang's builtins make ([]string, []int,
// map[string]string, ...) and anything else by its kind.
func (s *sizeWalk) reflected(rv reflect.Value) {
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			s.n += 4
			return
		}
		s.value(rv.Elem(), rv.Elem().Interface())
	case reflect.String:
		s.n += stringSize(rv.String())
	case reflect.Bool:
		s.n += 5
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.n += int64(len(strconv.AppendInt(s.num[:0], rv.Int(), 10)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.n += int64(len(strconv.AppendUint(s.num[:0], rv.Uint(), 10)))
	case reflect.Float32, reflect.Float64:
		s.n += int64(s.floatSize(rv.Float()))
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			s.n += 4
			return
		}
		if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			s.n += 2 + int64((rv.Len()+2)/3*4) // base64
			return
		}
		s.n += 2 + int64(max(rv.Len()-1, 0))
		defer func() { s.depth-- }()
		if !s.enter() {
			return
		}
		for i := range rv.Len() {
			if s.over() {
				return
			}
			e := rv.Index(i)
			s.value(e, e.Interface())
		}
	case reflect.Map:
		if rv.IsNil() {
			s.n += 4
			return
		}
		s.n += 2 + int64(max(rv.Len()-1, 0))
		defer func() { s.depth-- }()
		if !s.enter() {
			return
		}
		it := rv.MapRange()
		for it.Next() {
			if s.over() {
				return
			}
			k := it.Key()
			if k.Kind() == reflect.String {
				s.n += stringSize(k.String()) + 1
			} else {
				s.n += 2 + 24 + 1 // a number key, quoted
			}
			e := it.Value()
			s.value(e, e.Interface())
		}
	default:
		// Structs and the rest: what encoding/json makes of them, which
		// no expression builds large.
		b, err := json.Marshal(rv.Interface())
		if err != nil {
			s.n += 4
			return
		}
		s.n += int64(len(b))
	}
}

// floatSize is the length of f as encoding/json writes it.
func (s *sizeWalk) floatSize(f float64) int {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 4 // json.Marshal refuses it; the caller says so
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(s.num[:0], f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		return n - 1 // e-07 is written e-7
	}
	return len(b)
}

// Clip returns a value whose JSON starts as v's does for at least
// budget bytes (all of it when v's is shorter), without copying more of v
// than that: the preview of a traced value too large to send, made
// without encoding the value whole. Members are taken in the order
// encoding/json writes them (sorted keys).
func Clip(v any, budget int64) any {
	c, _ := clip(v, budget)
	return c
}

// clip returns v clipped to about budget bytes of JSON and the bytes the
// clipped value takes.
func clip(v any, budget int64) (any, int64) {
	if n, fits, _ := SizeWithin(v, budget); fits {
		return v, n
	}
	switch v := v.(type) {
	case string:
		n := int(min(budget, int64(len(v))))
		for n > 0 && n < len(v) && !utf8.RuneStart(v[n]) {
			n--
		}
		return v[:n], budget
	case []any:
		out, used := make([]any, 0, 8), int64(2)
		for _, e := range v {
			c, n := clip(e, budget-used)
			out = append(out, c)
			if used += n + 1; used >= budget {
				break
			}
		}
		return out, used
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out, used := make(map[string]any, 8), int64(2)
		for _, k := range keys {
			used += stringSize(k) + 1
			c, n := clip(v[k], budget-used)
			out[k] = c
			if used += n + 1; used >= budget {
				break
			}
		}
		return out, used
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() != reflect.Uint8 {
			out, used := make([]any, 0, 8), int64(2)
			for i := range rv.Len() {
				c, n := clip(rv.Index(i).Interface(), budget-used)
				out = append(out, c)
				if used += n + 1; used >= budget {
					break
				}
			}
			return out, used
		}
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := make(map[string]any, rv.Len())
			it := rv.MapRange()
			for it.Next() {
				m[it.Key().String()] = it.Value().Interface()
			}
			return clip(m, budget)
		}
	}
	return v, budget // a leaf no expression makes large
}
