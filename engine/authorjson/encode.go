package authorjson

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// Nothing an author writes is HTML: Append writes <, > and & as they are,
// one byte each, as the event writer writes them. encoding/json cannot be
// this encoder: it encodes into a buffer of its own, grown by doubling and
// kept in a pool, then copied out; it escapes HTML unless told otherwise;
// and it cannot be stopped. Sixteen code nodes whose input was 8 MB of <
// took a gigabyte that way, before any worker was free to receive it.

// errorf is a value Append cannot write, with its code: a *lang.Error,
// which the engine reports as it reports an evaluation's failure.
func errorf(code protocol.Code, format string, args ...any) *lang.Error {
	return &lang.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Append appends v's JSON to dst as encoding/json writes it with HTML
// escaping off (sorted keys, the same numbers and escapes), and returns
// the extended buffer. The caller has sized v (SizeWithin), which
// bounds the work: every element costs a byte at least. ctx is checked
// every checkEvery bytes. It fails with a *lang.Error for a value nested
// past MaxDepth (LIMIT_EXCEEDED) or holding what JSON cannot, such as NaN
// (EXPRESSION_ERROR), or with ctx's error.
func Append(ctx context.Context, dst []byte, v any) ([]byte, error) {
	e := jsonAppender{ctx: ctx, b: dst, next: len(dst) + checkEvery}
	if err := e.value(v, 0); err != nil {
		return dst, err
	}
	return e.b, nil
}

// checkEvery is how many bytes Append writes between looks at
// its context: about a millisecond of work.
const checkEvery = 1 << 20

type jsonAppender struct {
	ctx  context.Context
	b    []byte
	next int
}

func (e *jsonAppender) check() error {
	if len(e.b) < e.next {
		return nil
	}
	e.next = len(e.b) + checkEvery
	return e.ctx.Err()
}

func (e *jsonAppender) value(v any, depth int) error {
	if depth > MaxDepth {
		return errorf(protocol.CodeLimitExceeded, "the value nests deeper than %d levels, which JSON decoders refuse", MaxDepth)
	}
	switch v := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case string:
		e.b = protocol.AppendString(e.b, v)
		return e.check()
	case float64:
		return e.float(v)
	case bool:
		e.b = strconv.AppendBool(e.b, v)
	case json.Number:
		if v == "" {
			v = "0"
		}
		e.b = append(e.b, v...)
	case json.RawMessage:
		// Made by this runner (a decoded document's, a child's output):
		// written as it is, as SizeWithin counted it.
		if v == nil {
			v = json.RawMessage("null")
		}
		e.b = append(e.b, v...)
		return e.check()
	case []any:
		e.b = append(e.b, '[')
		for i, x := range v {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.value(x, depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, ']')
		return e.check()
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.b = append(e.b, '{')
		for i, k := range keys {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(protocol.AppendString(e.b, k), ':')
			if err := e.value(v[k], depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
		return e.check()
	default:
		return e.reflected(reflect.ValueOf(v), depth)
	}
	return nil
}

// reflected writes what expr-lang's builtins make ([]string, []int,
// map[string]string, ...), and anything else as encoding/json does.
func (e *jsonAppender) reflected(rv reflect.Value, depth int) error {
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		return e.value(rv.Elem().Interface(), depth)
	case reflect.String:
		if rv.Type() == reflect.TypeFor[json.Number]() {
			break
		}
		e.b = protocol.AppendString(e.b, rv.String())
		return e.check()
	case reflect.Bool:
		e.b = strconv.AppendBool(e.b, rv.Bool())
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.b = strconv.AppendInt(e.b, rv.Int(), 10)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.b = strconv.AppendUint(e.b, rv.Uint(), 10)
		return nil
	case reflect.Float64:
		return e.float(rv.Float())
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			if rv.Kind() == reflect.Array {
				break
			}
			e.b = append(e.b, '"')
			e.b = base64.StdEncoding.AppendEncode(e.b, rv.Bytes())
			e.b = append(e.b, '"')
			return e.check()
		}
		e.b = append(e.b, '[')
		for i := range rv.Len() {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.value(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, ']')
		return e.check()
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || rv.Type().Key().Implements(reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()) {
			break
		}
		if rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		keys := make([]string, 0, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			keys = append(keys, it.Key().String())
		}
		slices.Sort(keys)
		e.b = append(e.b, '{')
		for i, k := range keys {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(protocol.AppendString(e.b, k), ':')
			x := rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key()))
			if err := e.value(x.Interface(), depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
		return e.check()
	}
	// Structs, float32 and the rest, which no expression makes large:
	// encoding/json's own, HTML escaping off.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rv.Interface()); err != nil {
		return errorf(protocol.CodeExpressionError, "a value JSON cannot hold: %v", err)
	}
	e.b = append(e.b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	return nil
}

// float writes f as encoding/json does.
func (e *jsonAppender) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return errorf(protocol.CodeExpressionError, "the number %s has no JSON form", strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if n := len(e.b); format == 'e' && n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
		e.b[n-2] = e.b[n-1] // e-07 is written e-7
		e.b = e.b[:n-1]
	}
	return nil
}

// stringSize is the length protocol.AppendString writes for s.
func stringSize(s string) int64 { return lang.JSONStringSizeNoHTML(s) }
