package lang

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Template is a JSON value whose strings may hold `${{ expr }}`. It is
// compiled once, before acceptance, and evaluated per attempt. A string that
// is exactly one `${{ }}` yields the expression's typed value; mixed text
// interpolates; `$${{` is a literal `${{`. The zero Template evaluates to nil.
type Template struct {
	root    tnode
	refs    []string // nodes referenced anywhere in the template
	all     bool     // nodes read whole: every visible node's state is built
	secrets bool     // secrets.NAME is in scope (http request fields)
	// secretRefs and allSecrets gather the secrets the template's
	// expressions use (see Expression).
	secretRefs []string
	allSecrets bool
}

// IsZero reports whether the template is absent.
func (t Template) IsZero() bool { return t.root == nil }

// Member returns the template of key's value when t is an object of that
// one member, and false otherwise. Evaluating it gives what evaluating t
// gives under key, without building the object around it.
func (t Template) Member(key string) (Template, bool) {
	switch r := t.root.(type) {
	case *object:
		if len(r.members) == 1 && r.members[0].key == key {
			t.root = r.members[0].val
			return t, true
		}
	case literal:
		if m, ok := r.v.(map[string]any); ok && len(m) == 1 {
			if v, ok := m[key]; ok {
				t.root = literal{v}
				return t, true
			}
		}
	}
	return Template{}, false
}

// Secrets returns the secrets the template names, and whether it also
// reads secrets otherwise (indexed dynamically, passed whole).
func (t Template) Secrets() (names []string, all bool) { return t.secretRefs, t.allSecrets }

// UsesSecrets reports whether the template was compiled where secrets are
// in scope: its evaluation needs Evaluator.SetSecrets.
func (t Template) UsesSecrets() bool { return t.secrets }

type tnode interface {
	eval(ev *Evaluator) (any, error)
}

type literal struct{ v any }

type typed struct{ e *Expression }

type mixed struct {
	lits  []string // len(lits) == len(exprs)+1
	exprs []*Expression
}

// object is a JSON object with a template among its values, its members
// sorted by key. It is used by pointer: newObject makes it and its
// members in one allocation.
type object struct{ members []member }

type member struct {
	key string
	val tnode
}

// newObject returns an object of n members. Most objects templates hold
// (a node's with, an http request's headers) are small: their members are
// allocated with the object, one allocation where there were three (keys,
// values, the object put in an interface).
func newObject(n int) *object {
	switch n {
	case 1:
		b := &struct {
			o object
			m [1]member
		}{}
		b.o.members = b.m[:]
		return &b.o
	case 2:
		b := &struct {
			o object
			m [2]member
		}{}
		b.o.members = b.m[:]
		return &b.o
	case 3, 4:
		b := &struct {
			o object
			m [4]member
		}{}
		b.o.members = b.m[:n]
		return &b.o
	}
	return &object{members: make([]member, n)}
}

type array struct{ elems []tnode }

// Problems receives what compiling finds wrong, each at the request path
// of the value it is about.
type Problems interface {
	// Invalid refuses the request.
	Invalid(path, msg string)
	// NeedsRuntime is an error that only the request's runtime payload can
	// settle (a secret it must declare).
	NeedsRuntime(path, msg string)
	// Warn does not refuse the request.
	Warn(path, msg string)
}

// CompileTemplate compiles a decoded JSON value. path is the JSON path of v
// in the request, for the problems reported to errs.
func CompileTemplate(path string, v any, sc *Scope, errs Problems) Template {
	return compileTemplateAt(&valuePath{root: path}, v, sc, errs)
}

// CompileTemplateAt is CompileTemplate at the path root+suffix, which is
// only put together for a message.
func CompileTemplateAt(root, suffix string, v any, sc *Scope, errs Problems) Template {
	return compileTemplateAt(&valuePath{root: root, suffix: suffix}, v, sc, errs)
}

func compileTemplateAt(path *valuePath, v any, sc *Scope, errs Problems) Template {
	t := Template{secrets: sc.Secrets != nil}
	t.root = compileNode(path, v, sc, errs, &t)
	return t
}

func compileNode(path *valuePath, v any, sc *Scope, errs Problems, t *Template) tnode {
	switch v := v.(type) {
	case string:
		if !strings.Contains(v, "${{") {
			return literal{v}
		}
		return compileString(path, v, sc, errs, t)
	case map[string]any:
		o := newObject(len(v))
		i := 0
		for k := range v {
			o.members[i].key = k
			i++
		}
		if len(o.members) > 1 {
			slices.SortFunc(o.members, func(a, b member) int { return strings.Compare(a.key, b.key) })
		}
		static := true
		for i := range o.members {
			m := &o.members[i]
			path.push(pathSeg{key: m.key})
			m.val = compileNode(path, v[m.key], sc, errs, t)
			path.pop()
			if _, ok := m.val.(literal); !ok {
				static = false
			}
		}
		if static {
			// The compiled literals, not v: an escaped $${{ is already
			// unescaped in them.
			lit := make(map[string]any, len(o.members))
			for _, m := range o.members {
				lit[m.key] = m.val.(literal).v
			}
			return literal{lit}
		}
		return o
	case []any:
		a := array{elems: make([]tnode, len(v))}
		static := true
		for i, e := range v {
			path.push(pathSeg{index: i, elem: true})
			a.elems[i] = compileNode(path, e, sc, errs, t)
			path.pop()
			if _, ok := a.elems[i].(literal); !ok {
				static = false
			}
		}
		if static {
			vals := make([]any, len(a.elems))
			for i, e := range a.elems {
				vals[i] = e.(literal).v
			}
			return literal{vals}
		}
		return a
	}
	return literal{v}
}

func compileString(path *valuePath, s string, sc *Scope, errs Problems, t *Template) tnode {
	// A whole string that is one expression, the usual form, needs neither
	// the pieces nor the text between them.
	if len(s) > 5 && strings.HasPrefix(s, "${{") && !strings.Contains(s[3:], "${{") && strings.Index(s, "}}") == len(s)-2 {
		e := compilePiece(path, s[3:len(s)-2], sc, errs, t)
		if e == nil {
			return literal{s}
		}
		return typed{e}
	}
	var lits []string
	var exprs []*Expression
	var cur strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			cur.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' {
			cur.WriteString(s[:i-1])
			cur.WriteString("${{")
			s = s[i+3:]
			continue
		}
		end := strings.Index(s[i+3:], "}}")
		if end < 0 {
			errs.Invalid(path.String(), "unterminated ${{ (missing }})")
			return literal{s}
		}
		cur.WriteString(s[:i])
		e := compilePiece(path, s[i+3:i+3+end], sc, errs, t)
		if e == nil {
			return literal{s}
		}
		lits = append(lits, cur.String())
		cur.Reset()
		exprs = append(exprs, e)
		s = s[i+3+end+2:]
	}
	lits = append(lits, cur.String())
	if len(exprs) == 0 {
		return literal{lits[0]}
	}
	if len(exprs) == 1 && lits[0] == "" && lits[1] == "" {
		return typed{exprs[0]}
	}
	return mixed{lits: lits, exprs: exprs}
}

// compilePiece compiles the source between one ${{ and its }}, checks its
// input references and notes it in t. It reports a failure in errs and
// returns nil.
func compilePiece(path *valuePath, src string, sc *Scope, errs Problems, t *Template) *Expression {
	if !sc.Tally.take(path, errs) {
		return nil
	}
	e, err := compileExpr(strings.TrimSpace(src), sc)
	if err != nil {
		reportExpr(errs, path.String(), err)
		return nil
	}
	checkInput(path, e, sc, errs)
	t.note(e)
	return e
}

// checkInput checks e's input.<name> references against the input
// schema, rendering the path only when there are some.
func checkInput(path *valuePath, e *Expression, sc *Scope, errs Problems) {
	if sc.Input != nil && len(e.inputRefs) > 0 {
		sc.Input.check(path.String(), e, errs, sc.Hints)
	}
}

// Tally counts the expressions compiled for one request against a cap:
// compiling one costs far more than its text, so a body of many small
// ones would cost time and memory out of proportion to its size. The zero
// value counts without a cap; a nil *Tally counts nothing.
type Tally struct {
	Max  int // maxExpressions; 0 or less: no cap
	n    int
	over bool
}

// take counts one expression, reporting false (and, the first time, the
// problem at path) once the cap is passed: nothing past it is compiled.
func (t *Tally) take(path *valuePath, errs Problems) bool {
	if t == nil {
		return true
	}
	t.n++
	if t.Max <= 0 || t.n <= t.Max {
		return true
	}
	if !t.over {
		t.over = true
		errs.Invalid(path.String(), fmt.Sprintf("the request holds more than maxExpressions (%d) expressions (each ${{ }} and each when counts); none past this one is compiled", t.Max))
	}
	return false
}

// reportExpr reports an expression's compile error, which may be one that
// only the runtime payload settles.
func reportExpr(errs Problems, path string, err error) {
	var re *runtimeRefError
	if errors.As(err, &re) {
		errs.NeedsRuntime(path, err.Error())
		return
	}
	errs.Invalid(path, err.Error())
}

// runtimeRefError is a compile error naming something the request's
// runtime payload must declare.
type runtimeRefError struct{ msg string }

func (e *runtimeRefError) Error() string { return e.msg }

func (t *Template) note(e *Expression) {
	if t.refs == nil {
		// e.refs are distinct and clipped: appending to them copies.
		t.refs = e.refs
	}
	for _, id := range e.refs {
		if !slices.Contains(t.refs, id) {
			t.refs = append(t.refs, id)
		}
	}
	t.all = t.all || e.all
	for _, name := range e.secretRefs {
		if !slices.Contains(t.secretRefs, name) {
			t.secretRefs = append(t.secretRefs, name)
		}
	}
	t.allSecrets = t.allSecrets || e.allSecrets
}

// CompileWhen compiles a node's `when`, a bare boolean expression. A whole
// `${{ … }}` around it is accepted as the bare expression. It returns nil
// when there are problems, reported to errs.
func CompileWhen(path, src string, sc *Scope, errs Problems) *Expression {
	if !sc.Tally.take(&valuePath{root: path}, errs) {
		return nil
	}
	src = unwrapWhen(src)
	e, err := compileExpr(src, sc)
	if err != nil {
		reportExpr(errs, path, err)
		return nil
	}
	sc.Input.check(path, e, errs, sc.Hints)
	if e.typ != nil && e.typ.Kind() != reflect.Bool && e.typ.Kind() != reflect.Interface {
		errs.Invalid(path, fmt.Sprintf("when %q gives %s, not a boolean (compare it, e.g. with == or !=)", src, typeWords(e.typ)))
		return nil
	}
	return e
}

// unwrapWhen returns the bare expression of a `when` written as one whole
// `${{ … }}`.
func unwrapWhen(src string) string {
	t := strings.TrimSpace(src)
	if strings.HasPrefix(t, "${{") && strings.HasSuffix(t, "}}") && strings.Count(t, "${{") == 1 {
		return strings.TrimSpace(t[3 : len(t)-2])
	}
	return src
}

// typeWords names a compile-time type as a workflow author knows it.
func typeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	}
	return "a " + t.String()
}

func (l literal) eval(*Evaluator) (any, error) { return l.v, nil }

func (x typed) eval(ev *Evaluator) (any, error) { return ev.run(x.e) }

func (m mixed) eval(ev *Evaluator) (any, error) {
	var b strings.Builder
	// The values interpolated are written into the text, which is what
	// the template hands on: they do not count towards settle.
	bulky, built := ev.bulky, ev.built
	defer func() { ev.bulky, ev.built = bulky, built }()
	for i, e := range m.exprs {
		b.WriteString(m.lits[i])
		v, err := ev.run(e)
		if err != nil {
			return nil, err
		}
		// The text grows by the value's size (its JSON, for non-strings):
		// charged before it is written, a step per 64 bytes encoded and
		// the bytes, measured with a walk that stops where the charge
		// would fail (a value of shared references is exponentially
		// larger written out than held).
		var size int64
		if s, ok := v.(string); ok {
			size = int64(len(s)) + 16
		} else {
			size = SizeWithin(v, ev.budget.sizeLimit(64, 1))
		}
		steps := int64(1)
		if _, ok := v.(string); !ok {
			steps += size / 64
		}
		if err := ev.budget.charge(steps, int64(len(m.lits[i]))+size); err != nil {
			return nil, exprError(e, err)
		}
		if err := writeInterpolated(&b, v); err != nil {
			return nil, err
		}
	}
	b.WriteString(m.lits[len(m.lits)-1])
	return b.String(), nil
}

// writeInterpolated writes v as mixed text shows it: strings as they are,
// null as nothing, everything else as JSON.
func writeInterpolated(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
	case string:
		b.WriteString(v)
	default:
		// Text is read by people and models: keep <, > and & as they are
		// rather than as \u003c escapes (the event writer does the same).
		var j bytes.Buffer
		enc := json.NewEncoder(&j)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("cannot write %s into text", withArticle(TypeName(v)))
		}
		b.Write(bytes.TrimSuffix(j.Bytes(), []byte("\n")))
	}
	return nil
}

func (o *object) eval(ev *Evaluator) (any, error) {
	out := make(map[string]any, len(o.members))
	for _, m := range o.members {
		v, err := m.val.eval(ev)
		if err != nil {
			return nil, err
		}
		out[m.key] = v
	}
	return out, nil
}

func (a array) eval(ev *Evaluator) (any, error) {
	out := make([]any, len(a.elems))
	for i, e := range a.elems {
		v, err := e.eval(ev)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// valuePath is where the template value being compiled sits, rendered
// only when a problem is reported: building the path string of every
// value as it is compiled would cost the document's depth times its size.
// It is a stack, pushed and popped as compileNode walks the value, so that
// walking allocates nothing until a value is nested deeper than its
// buffer (a path of linked frames, one per value, escaped to the heap).
type valuePath struct {
	root   string
	suffix string // follows root
	// The steps: the first ones in buf, the rest in more (a slice into buf
	// would point the path at itself, which moves it to the heap).
	n    int
	buf  [8]pathSeg
	more []pathSeg
}

// pathSeg is one step of a valuePath below its root: a member's key, or
// an array element's index.
type pathSeg struct {
	key   string
	index int
	elem  bool
}

func (p *valuePath) push(s pathSeg) {
	if p.n < len(p.buf) {
		p.buf[p.n] = s
	} else {
		p.more = append(p.more, s)
	}
	p.n++
}

func (p *valuePath) pop() {
	if p.n--; p.n >= len(p.buf) {
		p.more = p.more[:p.n-len(p.buf)]
	}
}

func (p *valuePath) String() string {
	var b strings.Builder
	b.WriteString(p.root)
	b.WriteString(p.suffix)
	for i := range p.n {
		var s pathSeg
		if i < len(p.buf) {
			s = p.buf[i]
		} else {
			s = p.more[i-len(p.buf)]
		}
		if s.elem {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(pathKey(s.key))
	}
	return b.String()
}

// maxPathKey bounds one key as a path shows it: a path is made for every
// problem below its keys, and an author chooses their length (one key of
// 2 MB over 300 invalid expressions made 600 MB of paths). With the
// document's depth bounded, so is every path.
const maxPathKey = 256

// pathKey is k as a path shows it: whole up to maxPathKey bytes, its start
// and an ellipsis beyond.
func pathKey(k string) string {
	if len(k) <= maxPathKey {
		return k
	}
	n := maxPathKey - len("…")
	for n > 0 && !utf8.RuneStart(k[n]) {
		n--
	}
	return k[:n] + "…"
}
