package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// Fields reads a node's with fields by one set of rules and messages: on
// the literals of the document before acceptance (Compiler.Fields), and on
// the evaluated values at run time (Call.Fields). A missing or null field
// is absent: the readers return the zero value and false. Before
// acceptance a field holding a template is not known yet and reads as
// absent; a literal out of range is recorded on the Compiler, naming the
// field's path. At run time the first problem is kept for Err, an
// EXPRESSION_ERROR naming with.FIELD.
//
//	f := call.Fields()
//	steps, ok := f.Int("maxSteps", 1, 32)
//	if err := f.Err(); err != nil { ... }
type Fields struct {
	m   map[string]any
	c   *Compiler // set before acceptance
	err error
}

// Fields returns a reader of the node's literal with fields.
func (c *Compiler) Fields() *Fields { return &Fields{m: c.doc.With, c: c} }

// Fields returns a reader of the attempt's evaluated with fields.
func (c *Call) Fields() *Fields { return &Fields{m: c.WithMap()} }

// Err returns the first problem met at run time, nil before acceptance
// (where problems are recorded on the Compiler).
func (f *Fields) Err() error { return f.err }

func (f *Fields) value(name string) (any, bool) {
	v, ok := f.m[name]
	if !ok || v == nil {
		return nil, false
	}
	if s, isStr := v.(string); isStr && f.c != nil && strings.Contains(s, "${{") {
		return nil, false
	}
	return v, true
}

// fail records that field name must be what want says; got is the value
// met when its type is wrong (its JSON type is named, never its content).
func (f *Fields) fail(name, want string, got any, wrongType bool) {
	msg := "must be " + want
	if wrongType {
		msg += ", got " + JSONType(got)
	}
	if f.c != nil {
		f.c.Errorf(name, "%s", msg)
		return
	}
	if f.err == nil {
		f.err = Errorf(protocol.CodeExpressionError, "with.%s %s", name, msg)
	}
}

// Int reads a whole number from lo to hi (hi math.MaxInt for no bound).
func (f *Fields) Int(name string, lo, hi int) (int, bool) {
	v, ok := f.value(name)
	if !ok {
		return 0, false
	}
	n, isInt := lang.AsInt(v)
	if !isInt || n < lo || n > hi {
		want := fmt.Sprintf("a whole number from %d to %d", lo, hi)
		if hi == math.MaxInt {
			want = fmt.Sprintf("a whole number of at least %d", lo)
		}
		_, isNum := asFloat(v)
		f.fail(name, want, v, !isNum)
		return 0, false
	}
	return n, true
}

// Float reads a number from lo to hi.
func (f *Fields) Float(name string, lo, hi float64) (float64, bool) {
	v, ok := f.value(name)
	if !ok {
		return 0, false
	}
	n, isNum := asFloat(v)
	if !isNum || n < lo || n > hi {
		f.fail(name, fmt.Sprintf("a number between %g and %g", lo, hi), v, !isNum)
		return 0, false
	}
	return n, true
}

// Bool reads a boolean.
func (f *Fields) Bool(name string) (bool, bool) {
	v, ok := f.value(name)
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		f.fail(name, "a boolean", v, true)
	}
	return b, isBool
}

// String reads a string.
func (f *Fields) String(name string) (string, bool) {
	v, ok := f.value(name)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		f.fail(name, "a string", v, true)
	}
	return s, isStr
}

// asFloat accepts a number as JSON decodes it or as expr-lang computes it.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}
