package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/runnerd/lambda-runner/engine/lang"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the one way an author's value becomes bytes that leave the
// engine's values: a code node's input frame, a distributed map's batch,
// a traced value. encodeAuthor sizes the value as it will be written
// (jsonSizeWithin: escapes counted, none for HTML), refuses it in-band
// when it is over its bound, charges those bytes to the execution's memory
// budget before anything is allocated, and encodes it once (appendJSON),
// into a buffer of that size, checking the context as it goes. Nothing an
// author writes is HTML: <, > and & are written as they are, one byte
// each, as the event writer writes them.
//
// encoding/json cannot be that encoder: it encodes into a buffer of its
// own, grown by doubling and kept in a pool, then copied out; it escapes
// HTML unless told otherwise; and it cannot be stopped. Sixteen code nodes
// whose input was 8 MB of < took a gigabyte that way, before any worker
// was free to receive it.

// authorBytes is an author value encoded by encodeAuthor, charged to the
// execution's memory budget until release.
type authorBytes struct {
	B    []byte
	r    *run
	held int64
}

// release gives back what the bytes were charged; the caller drops B.
func (a *authorBytes) release() {
	if a != nil && a.held != 0 {
		a.r.budget.Add(-a.held)
		a.held = 0
	}
}

// encodeAuthor encodes v, what the message calls it ("with.input"), in at
// most limit bytes: sized first, charged to the execution's memory budget,
// then written once. The error is a *NodeError: LIMIT_EXCEEDED for a value
// over limit or nested past what JSON decoders read, MEMORY_BUDGET_EXCEEDED
// when the bytes would put the execution over its budget, EXPRESSION_ERROR
// for a value JSON cannot hold; or ctx's error.
func (r *run) encodeAuthor(ctx context.Context, what string, v any, limit int64) (*authorBytes, error) {
	n, err := sizeAuthor(what, v, limit)
	if err != nil {
		return nil, err
	}
	a, err := r.chargeAuthor(what, n)
	if err != nil {
		return nil, err
	}
	if a.B, err = appendJSON(ctx, make([]byte, 0, n), v); err != nil {
		a.release()
		return nil, err
	}
	return a, nil
}

// sizeAuthor is v's size as appendJSON writes it, refused over limit.
func sizeAuthor(what string, v any, limit int64) (int64, error) {
	n, fits, deep := jsonSizeWithin(v, limit)
	switch {
	case deep:
		return 0, Errorf(protocol.CodeLimitExceeded, "%s nests deeper than %d levels, which JSON decoders refuse", what, maxJSONDepth)
	case !fits:
		return 0, Errorf(protocol.CodeLimitExceeded, "%s is more than %d bytes as JSON", what, limit)
	}
	return n, nil
}

// chargeAuthor charges n bytes of what to the execution's memory budget,
// which the node outputs held share, before they are allocated.
func (r *run) chargeAuthor(what string, n int64) (*authorBytes, error) {
	budget := r.x.limits.MemoryBudget
	if total := r.budget.Add(n); budget > 0 && total > budget {
		r.budget.Add(-n)
		return nil, Errorf(protocol.CodeMemoryBudgetExceeded, "%s takes %d bytes as JSON, which would put the execution over its memory budget of %d bytes (node outputs and values being sent hold about %d)", what, n, budget, total-n)
	}
	return &authorBytes{r: r, held: n}, nil
}

// appendJSON appends v's JSON to dst as encoding/json writes it with HTML
// escaping off (sorted keys, the same numbers and escapes), and returns
// the extended buffer. The caller has sized v (jsonSizeWithin), which
// bounds the work: every element costs a byte at least. ctx is checked
// every encodeCheckEvery bytes.
func appendJSON(ctx context.Context, dst []byte, v any) ([]byte, error) {
	e := jsonAppender{ctx: ctx, b: dst, next: len(dst) + encodeCheckEvery}
	if err := e.value(v, 0); err != nil {
		return dst, err
	}
	return e.b, nil
}

// encodeCheckEvery is how many bytes appendJSON writes between looks at
// its context: about a millisecond of work.
const encodeCheckEvery = 1 << 20

type jsonAppender struct {
	ctx  context.Context
	b    []byte
	next int
}

func (e *jsonAppender) check() error {
	if len(e.b) < e.next {
		return nil
	}
	e.next = len(e.b) + encodeCheckEvery
	return e.ctx.Err()
}

func (e *jsonAppender) value(v any, depth int) error {
	if depth > maxJSONDepth {
		return Errorf(protocol.CodeLimitExceeded, "the value nests deeper than %d levels, which JSON decoders refuse", maxJSONDepth)
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
		// written as it is, as jsonSizeWithin counted it.
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
		return Errorf(protocol.CodeExpressionError, "a value JSON cannot hold: %v", err)
	}
	e.b = append(e.b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	return nil
}

// float writes f as encoding/json does.
func (e *jsonAppender) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Errorf(protocol.CodeExpressionError, "the number %s has no JSON form", strconv.FormatFloat(f, 'g', -1, 64))
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

// jsonStringSize is the length protocol.AppendString writes for s.
func jsonStringSize(s string) int64 { return lang.JSONStringSizeNoHTML(s) }

// encodeError names what an encoding failed on, for a node's message.
func encodeError(what string, err error) error {
	if ne, ok := err.(*NodeError); ok {
		return &NodeError{Code: ne.Code, Message: what + ": " + ne.Message, Err: ne.Err}
	}
	return fmt.Errorf("%s: %w", what, err)
}
