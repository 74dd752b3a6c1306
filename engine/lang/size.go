package lang

import (
	"encoding/json"
	"math"
	"reflect"
)

// SizeOf estimates the bytes a JSON-like value holds, without marshaling it:
// the budget is checked on every node output, so it must be cheap. It is
// the size of the value written out as a tree: a collection referenced
// twice counts twice, as every encoding of it writes it twice. A value an
// expression built from shared references (let a = [b, b]; …) can be
// exponentially larger than the memory it holds: callers that may see one
// use SizeWithin, which stops.
func SizeOf(v any) int64 { return SizeWithin(v, math.MaxInt64) }

// SizeWithin is SizeOf(v) when that is at most limit, and some size over
// limit otherwise, found having visited at most about limit/8 elements
// (every element visited adds at least 8 bytes): the walk stops as soon as
// it is over, so that no shared-reference structure makes it long.
func SizeWithin(v any, limit int64) int64 {
	w := sizeWalk{left: limit}
	w.add(v)
	return limit - w.left
}

// sizeWalk sums sizes down from left, stopping once it is negative.
// entry, when set, is added for each map entry besides its size.
type sizeWalk struct{ left, entry int64 }

func (w *sizeWalk) take(n int64) bool {
	w.left -= n
	return w.left >= 0
}

// add takes v's size and reports whether the walk may go on.
func (w *sizeWalk) add(v any) bool {
	switch v := v.(type) {
	case nil, bool:
		return w.take(8)
	case string:
		return w.take(int64(len(v)) + 16)
	case float64, int, int64, float32, int32, uint64:
		return w.take(8)
	case json.RawMessage:
		return w.take(int64(len(v)) + 24)
	case []byte:
		return w.take(int64(len(v)) + 24)
	case map[string]any:
		if !w.take(48) {
			return false
		}
		for k, e := range v {
			if !w.take(int64(len(k))+16+w.entry) || !w.add(e) {
				return false
			}
		}
		return true
	case []any:
		if !w.take(24) {
			return false
		}
		for _, e := range v {
			if !w.take(16) || !w.add(e) {
				return false
			}
		}
		return true
	}
	return w.addReflect(reflect.ValueOf(v))
}

// addReflect covers typed outputs (structs, typed slices and maps) that
// kinds return.
func (w *sizeWalk) addReflect(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Invalid:
		return w.take(8)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return w.take(8)
		}
		return w.take(8) && w.addReflect(v.Elem())
	case reflect.String:
		return w.take(int64(v.Len()) + 16)
	case reflect.Slice, reflect.Array:
		if !w.take(24) {
			return false
		}
		for i := 0; i < v.Len(); i++ {
			if !w.addReflect(v.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if !w.take(48) {
			return false
		}
		it := v.MapRange()
		for it.Next() {
			if !w.take(w.entry) || !w.addReflect(it.Key()) || !w.addReflect(it.Value()) {
				return false
			}
		}
		return true
	case reflect.Struct:
		if v.NumField() == 0 {
			// Every value visited takes something: a walk of a slice of
			// empty structs still ends.
			return w.take(8)
		}
		for i := 0; i < v.NumField(); i++ {
			if !w.addReflect(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return w.take(8)
}

// compareWithin is the work of comparing v deeply with runtime.Equal, in
// the units of SizeOf: its size, and mapEntryWork more for each map entry
// (maps are compared by reflect.DeepEqual, about 700 ns an entry measured
// against 10 ns an array element). It stops once over limit, as
// SizeWithin does.
func compareWithin(v any, limit int64) int64 {
	w := sizeWalk{left: limit, entry: mapEntryWork}
	w.add(v)
	return limit - w.left
}

// mapEntryWork is what comparing a map entry costs beyond its size, in
// bytes of SizeOf (compared at a step per 64): 8 steps, 800 ns.
const mapEntryWork = 8 * 64
