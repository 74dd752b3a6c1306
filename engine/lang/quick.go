package lang

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Parsing was the largest cost left per node once fast forms ran without
// the VM: expr's parser and checker allocate a token ring, a tree and type
// information for every text, and a workflow never seen before misses the
// program cache for each of its expressions. compileQuick reads the shapes
// fast forms cover — a reference (nodes.a.output.x, input.name) alone or
// with one operator and a number or another reference — straight from the
// text, and gives what compileBudgeted would: the same fast form, names,
// result type and no budget patch. Any other text, including every text
// expr would reject, is left to compileBudgeted. TestCompileQuickAgrees and
// FuzzCompileQuick hold the two in agreement.

// quickRoots are the names a quick reference may start with. secrets is
// not one: its uses are bound to requests (see compileExpr).
var quickRoots = map[string]bool{"nodes": true, "input": true, "execution": true, "item": true, "index": true}

// quickKeywords are words expr's lexer reads as operators or literals; a
// property spelled as one is left to expr.
var quickKeywords = map[string]bool{
	"not": true, "in": true, "or": true, "and": true, "matches": true, "contains": true,
	"startsWith": true, "endsWith": true, "let": true, "if": true, "else": true,
	"true": true, "false": true, "nil": true,
}

var (
	typeAny   = reflect.TypeFor[any]()
	typeBool  = reflect.TypeFor[bool]()
	typeFloat = reflect.TypeFor[float64]()
)

// compileQuick allocates two pieces: quickCompiled, what compiling and
// checking read (the compilation and its names), and what an evaluation
// reads, the Expression and its forms: quickHot for a reference alone,
// quickHotOp for an operator and its operands. A request meets its
// workflow's forms out of the CPU's caches, and evaluating one expression
// a node down a chain then waits on memory for each line it reads: apart,
// the hot pieces of a workflow's expressions, compiled in the order of its
// nodes, lie next to each other and are read in that order, which the CPU
// fetches ahead (bench/BASELINE.md, Round 16). The operands are read on
// the stack first (formSrc), so a text that is not quick allocates
// nothing, and a reference alone does not carry two operands' room: what
// is allocated per expression of a workflow never seen is most of the
// compile's cost in memory.
type quickCompiled struct {
	c  compiled
	rc refCollector
}

type quickHot struct {
	e Expression
	f fastForm
}

type quickHotOp struct {
	e   Expression
	f   fastForm
	ops [2]fastForm
}

// compileQuick compiles src when it has one of the quick shapes, and
// returns nil otherwise.
func compileQuick(src string) *compiled {
	q := quickParser{src: src}
	var l, r formSrc
	var lpath, rpath [8]string
	q.space()
	ln, ok := q.operand(&l, &lpath)
	if !ok {
		return nil
	}
	q.space()
	if q.pos == len(src) {
		if l.isLit {
			return nil // a literal alone is typed by the checker
		}
		hot := &quickHot{}
		hot.f.build(&l, lpath[:ln])
		out := &quickCompiled{}
		out.rc.init()
		out.rc.addRef(&l, lpath[:ln])
		out.c = compiled{src: src, fast: &hot.f, refs: &out.rc, typ: typeAny, expr: &hot.e}
		return &out.c
	}
	op, ok := opOf(q.operator())
	if !ok {
		return nil
	}
	q.space()
	rn, ok := q.operand(&r, &rpath)
	if !ok {
		return nil
	}
	q.space()
	// Literals alone are folded by expr's optimizer, and + on two
	// references may concatenate strings, which the budget patch charges.
	if q.pos != len(src) || l.isLit && r.isLit || fastOps[op].name == "+" && !l.isLit && !r.isLit {
		return nil
	}
	hot := &quickHotOp{}
	lf, rf := &hot.ops[0], &hot.ops[1]
	lf.build(&l, lpath[:ln])
	rf.build(&r, rpath[:rn])
	hot.f.buildOp(op, lf, rf)
	out := &quickCompiled{}
	out.rc.init()
	out.rc.addRef(&l, lpath[:ln])
	out.rc.addRef(&r, rpath[:rn])
	typ := typeAny
	switch fastOps[op].name {
	case "<", ">", "<=", ">=":
		typ = typeBool
	case "/":
		typ = typeFloat
	}
	out.c = compiled{src: src, fast: &hot.f, refs: &out.rc, typ: typ, expr: &hot.e}
	return &out.c
}

// addRef records the names s reads, its fields p, as the tree walk
// (Visit) would: the root, then each member from the innermost out.
func (c *refCollector) addRef(s *formSrc, p []string) {
	if s.isLit {
		return
	}
	if !slices.Contains(c.roots, s.root) {
		c.roots = append(c.roots, s.root)
	}
	if s.root == "nodes" {
		c.nodesUses++
	}
	if len(p) >= 1 {
		switch s.root {
		case "nodes":
			c.nodeRefs = append(c.nodeRefs, p[0])
		case "input":
			c.inputRefs = append(c.inputRefs, p[0])
		}
	}
	if s.root != "nodes" {
		return
	}
	if len(p) >= 2 {
		c.nodeFields = append(c.nodeFields, nodeField{id: p[0], field: p[1]})
	}
	if len(p) >= 3 && p[1] == "error" {
		c.nodeFields = append(c.nodeFields, nodeField{id: p[0], field: p[2], sub: true})
	}
}

// quickParser reads the quick shapes; any byte it does not expect ends
// the reading with no result.
type quickParser struct {
	src string
	pos int
}

// space skips blanks and comments, as expr's lexer does. An unclosed
// comment is left in place, so that the text is not quick.
func (q *quickParser) space() {
	for q.pos < len(q.src) {
		switch c := q.src[q.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			q.pos++
		case c == '/' && q.pos+1 < len(q.src) && q.src[q.pos+1] == '/':
			for q.pos < len(q.src) && q.src[q.pos] != '\n' {
				q.pos++
			}
		case c == '/' && q.pos+1 < len(q.src) && q.src[q.pos+1] == '*':
			end := strings.Index(q.src[q.pos+2:], "*/")
			if end < 0 {
				return
			}
			q.pos += 2 + end + 2
		default:
			return
		}
	}
}

// operand reads a reference or a number into s, and the reference's n
// fields into path.
func (q *quickParser) operand(s *formSrc, path *[8]string) (n int, ok bool) {
	if q.pos >= len(q.src) {
		return 0, false
	}
	if c := q.src[q.pos]; c >= '0' && c <= '9' {
		return 0, q.number(s)
	}
	root := q.ident()
	if !quickRoots[root] {
		return 0, false
	}
	for q.pos < len(q.src) && q.src[q.pos] == '.' {
		q.pos++
		name := q.ident()
		if name == "" || quickKeywords[name] || n == len(path) {
			return 0, false
		}
		path[n] = name
		n++
	}
	if q.pos < len(q.src) && !quickStop(q.src[q.pos]) {
		return 0, false
	}
	*s = formSrc{root: root}
	return n, true
}

// ident reads an ASCII identifier.
func (q *quickParser) ident() string {
	start := q.pos
	for q.pos < len(q.src) {
		c := q.src[q.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || q.pos > start && c >= '0' && c <= '9' {
			q.pos++
			continue
		}
		break
	}
	return q.src[start:q.pos]
}

// number reads a decimal integer that fits an int, or digits.digits; the
// other spellings expr accepts (0x, 1_000, 1e3, a leading 0) are left to it.
func (q *quickParser) number(s *formSrc) bool {
	start := q.pos
	for q.pos < len(q.src) && q.src[q.pos] >= '0' && q.src[q.pos] <= '9' {
		q.pos++
	}
	digits := q.pos - start
	if digits > 1 && q.src[start] == '0' {
		return false
	}
	isFloat := false
	if q.pos < len(q.src) && q.src[q.pos] == '.' {
		q.pos++
		frac := q.pos
		for q.pos < len(q.src) && q.src[q.pos] >= '0' && q.src[q.pos] <= '9' {
			q.pos++
		}
		if q.pos == frac {
			return false
		}
		isFloat = true
	}
	if q.pos < len(q.src) && !quickStop(q.src[q.pos]) {
		return false
	}
	text := q.src[start:q.pos]
	if isFloat {
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return false
		}
		*s = formSrc{lit: v, isLit: true}
		return true
	}
	if digits > 18 {
		return false
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return false
	}
	*s = formSrc{lit: v, isLit: true}
	return true
}

// quickStop reports whether c may follow an operand: a blank, the start
// of a comment or one of the quick operators.
func quickStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '/', '+', '-', '*', '<', '>':
		return true
	}
	return false
}

// operator reads one of the operators fast forms apply.
func (q *quickParser) operator() string {
	if q.pos >= len(q.src) {
		return ""
	}
	next := byte(0)
	if q.pos+1 < len(q.src) {
		next = q.src[q.pos+1]
	}
	var op string
	switch c := q.src[q.pos]; c {
	case '+', '-':
		op = q.src[q.pos : q.pos+1]
	case '*':
		if next == '*' || next == '=' || next == '&' {
			return ""
		}
		op = "*"
	case '/':
		op = "/" // comments were skipped before
	case '<', '>':
		switch next {
		case '=':
			op = q.src[q.pos : q.pos+2]
		case '&', '*':
			return ""
		default:
			op = q.src[q.pos : q.pos+1]
		}
	default:
		return ""
	}
	q.pos += len(op)
	return op
}
