package lang

import (
	"encoding/json"
	"reflect"
)

// SizeOf estimates the bytes a JSON-like value holds, without marshaling it:
// the budget is checked on every node output, so it must be cheap.
func SizeOf(v any) int64 {
	switch v := v.(type) {
	case nil, bool:
		return 8
	case string:
		return int64(len(v)) + 16
	case float64, int, int64, float32, int32, uint64:
		return 8
	case json.RawMessage:
		return int64(len(v)) + 24
	case []byte:
		return int64(len(v)) + 24
	case map[string]any:
		n := int64(48)
		for k, e := range v {
			n += int64(len(k)) + 16 + SizeOf(e)
		}
		return n
	case []any:
		n := int64(24)
		for _, e := range v {
			n += 16 + SizeOf(e)
		}
		return n
	}
	return sizeOfReflect(reflect.ValueOf(v))
}

// sizeOfReflect covers typed outputs (structs, typed slices and maps) that
// kinds return.
func sizeOfReflect(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Invalid:
		return 8
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 8
		}
		return 8 + sizeOfReflect(v.Elem())
	case reflect.String:
		return int64(v.Len()) + 16
	case reflect.Slice, reflect.Array:
		n := int64(24)
		for i := 0; i < v.Len(); i++ {
			n += sizeOfReflect(v.Index(i))
		}
		return n
	case reflect.Map:
		n := int64(48)
		it := v.MapRange()
		for it.Next() {
			n += sizeOfReflect(it.Key()) + sizeOfReflect(it.Value())
		}
		return n
	case reflect.Struct:
		n := int64(0)
		for i := 0; i < v.NumField(); i++ {
			n += sizeOfReflect(v.Field(i))
		}
		return n
	}
	return 8
}
