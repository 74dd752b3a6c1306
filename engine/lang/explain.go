package lang

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
)

// expr's run-time errors are Go's: `invalid operation: <nil> + int`,
// `reflect: call of reflect.Value.Len on zero Value`, `interface
// conversion: interface {} is float64, not string`. A workflow author
// knows neither Go nor expr's VM, and the usual cause is a name misspelt
// in an output that has no declared shape, which reads as null. So a
// failed evaluation is explained here, on the error path only: the
// message is put in the language's words (null, number, string, array,
// object, boolean), the failing operation is found in the expression's
// tree by the position expr reports, and the references it operates on
// (a name and the fields and indexes read from it) are read again to
// say what each was and, for a null, where it came from:
//
//	expression "nodes.a.output.totl + 1" at 1:21: cannot compute null + number;
//	nodes.a.output.totl is null (nodes.a.output has no key "totl"; it has "order", "total")
//
// Reading references again is charged to the evaluation's budget; when
// that is spent, the message has no facts. Nothing else is evaluated
// again: an operand computed by a call or inside a predicate is named by
// its type, when the message gives it.

// TypeName names v's type as the expression language does: null, boolean,
// number, string, array, object, and for expr's own values date,
// duration and timezone.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case time.Time:
		return "date"
	case time.Duration:
		return "duration"
	case *time.Location:
		return "timezone"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Func:
		return "function"
	case reflect.Pointer, reflect.Interface:
		if reflect.ValueOf(v).IsNil() {
			return "null"
		}
	}
	return "value"
}

// withArticle is "a number", "an array", "null".
func withArticle(t string) string {
	switch t {
	case "null", "":
		return t
	case "array", "object", "any value":
		if t == "any value" {
			return t
		}
		return "an " + t
	}
	return "a " + t
}

// goTypeWord names a type as Go or reflect prints it (float64,
// map[string]interface {}, <nil>, a reflect.Kind) in the language's words,
// "" for a word that is not a type.
func goTypeWord(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "<nil>", s == "nil", s == "invalid", s == "zero", s == "unknown", strings.HasPrefix(s, "%!") && strings.Contains(s, "<nil>"):
		return "null"
	case strings.HasPrefix(s, "[]"), s == "slice", s == "array":
		return "array"
	case strings.HasPrefix(s, "map["), s == "map", s == "struct":
		return "object"
	case s == "string":
		return "string"
	case s == "bool":
		return "boolean"
	case s == "time.Time":
		return "date"
	case s == "time.Duration":
		return "duration"
	case s == "*time.Location":
		return "timezone"
	case strings.HasPrefix(s, "func"):
		return "function"
	case s == "interface {}", s == "interface", s == "any":
		return "any value"
	}
	switch strings.TrimLeft(s, "u") {
	case "int", "int8", "int16", "int32", "int64", "float32", "float64", "float", "number":
		return "number"
	}
	return ""
}

// typeWordOrValue is goTypeWord(s), or s quoted as a value expr printed
// when it names no type.
func typeWordOrValue(s string) string {
	if w := goTypeWord(s); w != "" {
		return w
	}
	return "the value " + quoteShort(s)
}

// quoteShort quotes s, cut to maxQuoted characters: messages quote the
// values expr printed (a string that is not a date) and an object's keys,
// and those are the author's, of any length.
func quoteShort(s string) string {
	const maxQuoted = 40
	if utf8.RuneCountInString(s) > maxQuoted {
		r := []rune(s)
		return strconv.Quote(string(r[:maxQuoted])) + "…"
	}
	return strconv.Quote(s)
}

// comparisons are the operators that order their operands.
var comparisons = map[string]bool{"<": true, ">": true, "<=": true, ">=": true}

// reason is one rephrasing of an expr message: re matches the message,
// say writes it in the language's words from the submatches and the
// failing operation (nil when unknown).
type reason struct {
	re  *regexp.Regexp
	say func(m []string, op ast.Node) string
}

// reasons are tried in order: the first that matches rephrases the
// message. Every message expr's VM and builtins raise at run time that
// names a Go type, a reflect call or a package is here (explain_test.go
// runs each operator and builtin with arguments of every wrong type).
var reasons = []reason{
	{regexp.MustCompile(`^invalid operation: (.+?) (\+|-|\*|/|%|\*\*|\^|<|>|<=|>=|==|!=) (.+)$`), func(m []string, _ ast.Node) string {
		l, op, r := typeWordOrValue(m[1]), m[2], typeWordOrValue(m[3])
		switch {
		case comparisons[op]:
			return fmt.Sprintf("cannot compare %s %s %s (< > <= >= compare two numbers, two strings or two dates)", l, op, r)
		case op == "%" && l == "number" && r == "number":
			return "cannot compute number % number: % takes whole numbers, and a number read from JSON is not one (int(x) % n converts it)"
		}
		return fmt.Sprintf("cannot compute %s %s %s", l, op, r)
	}},
	{regexp.MustCompile(`^invalid operation: (-|\+|!|not) (.+)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("cannot apply %s to %s", m[1], withArticle(typeWordOrValue(m[2])))
	}},
	{regexp.MustCompile(`^invalid operation: (int|int64|float|bool)\((.*)\)$`), func(m []string, op ast.Node) string {
		if b, ok := op.(*ast.BuiltinNode); ok && (b.Name == "int" || b.Name == "float") {
			if w := goTypeWord(m[2]); w != "" && w != "string" {
				return fmt.Sprintf("%s converts a number or a numeric string, not %s", b.Name, withArticle(w))
			}
			return fmt.Sprintf("%s cannot read the string %s as a number", b.Name, quoteShort(m[2]))
		}
		want := "a number"
		if m[1] == "bool" {
			want = "a boolean"
		}
		return needed(want, withArticle(typeWordOrValue(m[2])), op)
	}},
	{regexp.MustCompile(`^interface conversion: interface \{\} is (.+), not (.+)$`), func(m []string, op ast.Node) string {
		return needed(withArticle(typeWordOrValue(m[2])), withArticle(typeWordOrValue(m[1])), op)
	}},
	{regexp.MustCompile(`^interface conversion: .*$`), func(_ []string, _ ast.Node) string {
		return "a value of the wrong type was given"
	}},
	{regexp.MustCompile(`^cannot fetch (.*) from (.+)$`), func(m []string, op ast.Node) string {
		t, key := typeWordOrValue(m[2]), fetchedKey(m[1], op)
		if t == "null" {
			return fmt.Sprintf("cannot read %s of null", key)
		}
		return fmt.Sprintf("cannot read %s of %s (only objects have fields, and arrays elements by number)", key, withArticle(t))
	}},
	{regexp.MustCompile(`^index out of range: (-?\d+) \(array length is (\d+)\)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("index %s is out of range: the array has %s elements", m[1], m[2])
	}},
	{regexp.MustCompile(`^reflect: call of reflect\.Value\.(\w+) on (\S+) Value$`), func(m []string, op ast.Node) string {
		got := withArticle(typeWordOrValue(m[2]))
		b, isBuiltin := op.(*ast.BuiltinNode)
		switch {
		case m[1] != "Len" && m[1] != "Index" && m[1] != "Slice" && isBuiltin:
			return fmt.Sprintf("%s cannot take %s", b.Name, got)
		case isBuiltin:
			return fmt.Sprintf("%s takes an array, got %s", b.Name, got)
		}
		return "an array was needed, got " + got
	}},
	{regexp.MustCompile(`^reflect\.Value\.MapIndex: value of type (.+) is not assignable to type (.+)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("an object's keys are %ss, got %s", typeWordOrValue(m[2]), withArticle(typeWordOrValue(m[1])))
	}},
	{regexp.MustCompile(`^reflect: .*$`), func(_ []string, op ast.Node) string {
		return "a value of the wrong type was given" + calledWith(op)
	}},
	{regexp.MustCompile(`^invalid argument for (\w+) \(type (.+)\)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("%s cannot take %s", m[1], withArticle(typeWordOrValue(m[2])))
	}},
	{regexp.MustCompile(`^cannot use (.+) as argument \(type (.+)\) to call (\w+)\s*$`), func(m []string, _ ast.Node) string {
		want := withArticle(typeWordOrValue(m[2]))
		if want == "a number" {
			want = "a whole number"
		}
		return fmt.Sprintf("%s takes %s, got %s", m[3], want, withArticle(typeWordOrValue(m[1])))
	}},
	{regexp.MustCompile(`^operator "(\w+)" not defined on (.+)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("%s needs an array or an object on its right, got %s", m[1], withArticle(typeWordOrValue(m[2])))
	}},
	{regexp.MustCompile(`^cannot slice`), func(_ []string, _ ast.Node) string {
		return "only an array or a string can be sliced"
	}},
	{regexp.MustCompile(`^cannot get (keys|values) from (.+)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("%s takes an object, got %s", m[1], withArticle(typeWordOrValue(m[2])))
	}},
	{regexp.MustCompile(`^cannot transform .* (to|from) pairs$`), func(m []string, _ ast.Node) string {
		if m[1] == "to" {
			return "toPairs takes an object"
		}
		return "fromPairs takes an array of [key, value] pairs"
	}},
	{regexp.MustCompile(`^invalid pair`), func(_ []string, _ ast.Node) string {
		return "fromPairs takes an array of [key, value] pairs"
	}},
	{regexp.MustCompile(`^cannot (take|reverse|uniq|concat|flatten) (from )?(.+?)( elements)?$`), func(m []string, op ast.Node) string {
		if m[1] == "take" && m[4] != "" {
			return "take takes a whole number of elements, got " + withArticle(typeWordOrValue(m[3]))
		}
		return fmt.Sprintf("%s takes an array, got %s", m[1], withArticle(typeWordOrValue(m[3])))
	}},
	{regexp.MustCompile(`^cannot get (first|last) element from (.+)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("%s takes an array, got %s", m[1], withArticle(typeWordOrValue(m[2])))
	}},
	{regexp.MustCompile(`^invalid date (.*)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("date cannot read %s as a date", quoteShort(m[1]))
	}},
	{regexp.MustCompile(`^time: invalid duration (.*)$`), func(m []string, _ ast.Node) string {
		return fmt.Sprintf("duration cannot read %s as a duration (write it as 1h30m, 10s, 250ms)", quoteShort(strings.Trim(m[1], `"`)))
	}},
	{regexp.MustCompile(`^time: (.*)$`), func(m []string, _ ast.Node) string { return m[1] }},
	{regexp.MustCompile(`^parsing time (.*)$`), func(m []string, _ ast.Node) string {
		return "date cannot read the string as a date in that layout"
	}},
	{regexp.MustCompile(`^(unexpected end of JSON input|invalid character .*|json: .*)$`), func(m []string, _ ast.Node) string {
		if strings.HasPrefix(m[1], "json:") {
			return "fromJSON takes a string of JSON"
		}
		return "fromJSON was given a string that is not JSON: " + m[1]
	}},
	{regexp.MustCompile(`^illegal base64 data at input byte (\d+)$`), func(m []string, _ ast.Node) string {
		return "fromBase64 was given a string that is not base64 (at byte " + m[1] + ")"
	}},
	{regexp.MustCompile(`^runtime error: integer divide by zero$`), func(_ []string, _ ast.Node) string {
		return "division by zero"
	}},
	{regexp.MustCompile(`^runtime error: (?:index|slice bounds) out of range.*$`), func(_ []string, _ ast.Node) string {
		return "an index is out of range"
	}},
	{regexp.MustCompile(`^(invalid operation: )?cannot call (nil|non-function.*)$`), func(_ []string, _ ast.Node) string {
		return "only a function can be called"
	}},
	{regexp.MustCompile(`^unknown time zone (.*)$`), func(m []string, _ ast.Node) string {
		return "timezone does not know the zone " + quoteShort(m[1])
	}},
}

// fetchedKey names the key expr printed as printed: the name written in
// the expression, a number, or a string; a key of another type expr
// prints as Go does, so it is only said to be one.
func fetchedKey(printed string, op ast.Node) string {
	if m, ok := op.(*ast.MemberNode); ok {
		if p, ok := m.Property.(*ast.StringNode); ok {
			return quoteShort(p.Value)
		}
	}
	if _, err := strconv.ParseFloat(printed, 64); err == nil {
		return printed
	}
	if strings.HasPrefix(printed, "[") || goWords.MatchString(printed) {
		return "a key that is not a string"
	}
	return quoteShort(printed)
}

// needed says that op was given got where it takes want, naming op as
// an author writes it.
func needed(want, got string, op ast.Node) string {
	switch v := op.(type) {
	case *ast.BuiltinNode:
		return fmt.Sprintf("%s takes %s, got %s", v.Name, want, got)
	case *ast.UnaryNode:
		return fmt.Sprintf("%s takes %s, got %s", v.Operator, want, got)
	case *ast.BinaryNode:
		return fmt.Sprintf("%s takes %s, got %s", v.Operator, want, got)
	case *ast.MemberNode:
		if p, named := v.Property.(*ast.StringNode); named && want == "a number" {
			return fmt.Sprintf("cannot read %s by name: only an object has named fields (an array or a string is indexed by number)", quoteShort(p.Value))
		}
		return fmt.Sprintf("an index must be %s, got %s", want, got)
	case *ast.SliceNode:
		return fmt.Sprintf("the bounds of [from:to] must be numbers, got %s", got)
	case *ast.ConditionalNode:
		return fmt.Sprintf("the condition of ?: or if must be %s, got %s", want, got)
	case *ast.CallNode:
		if m, ok := v.Callee.(*ast.MemberNode); ok {
			if name, ok := m.Property.(*ast.StringNode); ok {
				return fmt.Sprintf("%s takes %s, got %s", name.Value, want, got)
			}
		}
	}
	return fmt.Sprintf("%s was needed, got %s", want, got)
}

// calledWith names the builtin that failed, for a message of no other use.
func calledWith(op ast.Node) string {
	if b, ok := op.(*ast.BuiltinNode); ok {
		return " to " + b.Name
	}
	return ""
}

// goWords are what a message in the author's terms never holds: Go's
// type names, reflection, package paths, Go's runtime. A message that
// still has one once rephrased is replaced with a plain one.
var goWords = regexp.MustCompile(`interface ?\{|map\[|\[\]|\b(u?int(8|16|32|64)?|float(32|64)|complex(64|128)|uintptr|rune|struct)\b|reflect|<nil>|%!|runtime error|goroutine|\b[a-z]+\.[A-Z]\w*|\bfunc\(|\*[a-z]+\.`)

// compileReasons are what expr's type check says of an expression before
// it runs (its operands' static types), in the language's words: tried
// before reasons, which also serve what both say alike (an argument of
// the wrong type to a builtin). They are compiled on the first compile
// error, not at start: every cold start would pay for their regular
// expressions (about 330 allocations) and few processes see one.
var compileReasons struct {
	once sync.Once
	list []reason
}

func initCompileReasons() {
	compileReasons.list = []reason{
		{regexp.MustCompile(`^invalid operation: (\S+) \(mismatched types (.+) and (.+)\)$`), func(m []string, _ ast.Node) string {
			// Each operand's words are made once: withArticle is inlined
			// at every call.
			op, l, r := m[1], withArticle(typeWordOrValue(m[2])), withArticle(typeWordOrValue(m[3]))
			switch {
			case comparisons[op]:
				return fmt.Sprintf("cannot compare %s %s %s (< > <= >= compare two numbers, two strings or two dates)", l, op, r)
			case op == "in" || op == "not in":
				return fmt.Sprintf("%s needs an array or an object on its right, got %s", op, r)
			case op == "matches" || op == "contains" || op == "startsWith" || op == "endsWith":
				return fmt.Sprintf("%s takes two strings, got %s and %s", op, l, r)
			}
			return fmt.Sprintf("cannot compute %s %s %s", l, op, r)
		}},
		{regexp.MustCompile(`^invalid operation: (\S+) \(mismatched type (.+)\)$`), func(m []string, _ ast.Node) string {
			return fmt.Sprintf("cannot apply %s to %s", m[1], withArticle(typeWordOrValue(m[2])))
		}},
	}
}

// exprPosition returns the position expr appends to a message, " (1:7)",
// or "" when msg ends with none: what ` \(\d+:\d+\)$` matches, without a
// regular expression to compile at start.
func exprPosition(msg string) string {
	i := strings.LastIndex(msg, " (")
	if i < 0 || !strings.HasSuffix(msg, ")") {
		return ""
	}
	line, col, ok := strings.Cut(msg[i+2:len(msg)-1], ":")
	if !ok || !isDigits(line) || !isDigits(col) {
		return ""
	}
	return msg[i:]
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// rephraseCompile puts the first line of an expr compile error in the
// language's words, keeping its position.
func rephraseCompile(msg string) string {
	msg = strings.TrimSpace(msg)
	pos := exprPosition(msg)
	bare := strings.TrimSpace(strings.TrimSuffix(msg, pos))
	compileReasons.once.Do(initCompileReasons)
	for _, r := range compileReasons.list {
		if m := r.re.FindStringSubmatch(bare); m != nil {
			return r.say(m, nil) + pos
		}
	}
	for _, r := range reasons {
		if m := r.re.FindStringSubmatch(bare); m != nil {
			return r.say(m, nil) + pos
		}
	}
	if goWords.MatchString(bare) {
		return "the operation cannot be applied to these values" + pos
	}
	return msg
}

// rephrase puts an expr run-time message in the language's words.
func rephrase(msg string, op ast.Node) string {
	for _, r := range reasons {
		if m := r.re.FindStringSubmatch(msg); m != nil {
			return r.say(m, op)
		}
	}
	if goWords.MatchString(msg) {
		return "the operation cannot be applied to these values" + calledWith(op)
	}
	return msg
}

// explainer reads again the references a failed operation took, for
// the facts of its message.
type explainer struct {
	vars   map[string]any
	budget *exprBudget
	lets   []string // names the expression declares: not read again
}

// maxFacts bounds the facts of one message: an operation has at most
// three operands a reader needs told about.
const maxFacts = 3

// explain makes the message of a failed evaluation of src: the failing
// operation's position and text, why it failed in the language's words,
// and what the references it took were (vars nil: no facts).
func explain(src string, err error, vars map[string]any, b *exprBudget) (msg string) {
	defer func() {
		// Explaining must not be what fails a request: a tree or a value
		// it did not expect leaves the message without its facts.
		if r := recover(); r != nil {
			msg = fmt.Sprintf("expression %q: %s", src, rephrase(firstLine(err.Error()), nil))
		}
	}()
	var fe *file.Error
	if !errors.As(err, &fe) {
		return fmt.Sprintf("expression %q: %s", src, rephrase(firstLine(err.Error()), nil))
	}
	// The text is parsed again to find the operation: charged as the
	// bytes it reads, and not done when there is no budget to charge.
	var tree *parser.Tree
	var op ast.Node
	if b != nil && b.charge(1+int64(len(src))/8, 0) == nil {
		tree, op = failedOperation(src, fe.From, fe.Message)
	}
	var where string
	if fe.Line > 0 {
		where = fmt.Sprintf(" at %d:%d", fe.Line, fe.Column+1)
	}
	if op != nil && tree != nil && op != tree.Node {
		where += " (" + shortSource(op) + ")"
	}
	msg = fmt.Sprintf("expression %q%s: %s", src, where, rephrase(firstLine(fe.Message), op))
	if op == nil || vars == nil {
		return msg
	}
	x := explainer{vars: vars, budget: b, lets: declared(tree)}
	var facts []string
	for _, s := range operands(op) {
		if len(facts) == maxFacts {
			break
		}
		if f := x.fact(s); f != "" && !slices.Contains(facts, f) {
			facts = append(facts, f)
		}
	}
	if len(facts) > 0 {
		msg += "; " + strings.Join(facts, "; ")
	}
	return msg
}

// shortSource is n written out, cut to a line's length.
func shortSource(n ast.Node) string {
	s := n.String()
	if utf8.RuneCountInString(s) > 80 {
		s = string([]rune(s)[:80]) + "…"
	}
	return s
}

// failedOperation parses src again and returns its tree and the
// operation at from, the position expr reported: the outermost node
// there that operates on values, or the operation taking a reference
// that failed at its own position (a reference converted to an argument's
// type fails where it is written).
func failedOperation(src string, from int, msg string) (*parser.Tree, ast.Node) {
	config := configs.Get().(*conf.Config)
	tree, err := parser.ParseWithConfig(src, config)
	configs.Put(config)
	if err != nil {
		return nil, nil
	}
	f := &nodeFinder{from: from}
	ast.Walk(&tree.Node, f)
	if _, ok := f.found.(*ast.PointerNode); ok || f.found == nil {
		// The element of a predicate: what failed is the predicate's
		// builtin, which expr does not say.
		return tree, f.parent
	}
	if f.parent != nil && isReference(f.found) && !canFail(f.found, msg) {
		return tree, f.parent
	}
	return tree, f.found
}

// nodeFinder finds the outermost node at a position, and the operation
// whose operand it is.
type nodeFinder struct {
	from   int
	found  ast.Node
	parent ast.Node
}

func (f *nodeFinder) Visit(n *ast.Node) {
	// Children are visited first: the last node at from is the outermost.
	node := *n
	if f.found != nil && f.parent == nil && slices.Contains(operands(node), f.found) {
		f.parent = node
	}
	if node.Location().From != f.from {
		return
	}
	switch node.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.PredicateNode, *ast.PointerNode:
		if f.found != nil {
			return
		}
	}
	f.found, f.parent = node, nil
}

// canFail reports whether a reference failed by itself with msg: a field
// read from something that is not an object, an index out of range.
func canFail(n ast.Node, msg string) bool {
	if _, ok := n.(*ast.MemberNode); !ok {
		return false
	}
	for _, p := range []string{"cannot fetch", "index out of range", "invalid operation: int(", "runtime error"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isReference reports whether n is a name, or fields and indexes read
// from one.
func isReference(n ast.Node) bool {
	for {
		switch v := n.(type) {
		case *ast.IdentifierNode:
			return true
		case *ast.MemberNode:
			if v.Method {
				return false
			}
			n = v.Node
		case *ast.ChainNode:
			n = v.Node
		default:
			return false
		}
	}
}

// operands are the values op takes that a reader may need told about.
func operands(op ast.Node) []ast.Node {
	switch v := op.(type) {
	case *ast.BinaryNode:
		return []ast.Node{v.Left, v.Right}
	case *ast.UnaryNode:
		return []ast.Node{v.Node}
	case *ast.BuiltinNode:
		return v.Arguments
	case *ast.CallNode:
		if m, ok := v.Callee.(*ast.MemberNode); ok {
			return append([]ast.Node{m.Node}, v.Arguments...)
		}
		return v.Arguments
	case *ast.MemberNode:
		return []ast.Node{v.Node, v.Property}
	case *ast.ChainNode:
		return []ast.Node{v.Node}
	case *ast.SliceNode:
		return []ast.Node{v.Node, v.From, v.To}
	case *ast.ConditionalNode:
		return []ast.Node{v.Cond}
	}
	return nil
}

// declared lists the names an expression's lets declare.
func declared(tree *parser.Tree) []string {
	var c letCollector
	ast.Walk(&tree.Node, &c)
	return c.names
}

type letCollector struct{ names []string }

func (c *letCollector) Visit(n *ast.Node) {
	if v, ok := (*n).(*ast.VariableDeclaratorNode); ok {
		c.names = append(c.names, v.Name)
	}
}

// step is one field or index of a reference.
type step struct {
	key   string
	index int
	isKey bool
}

// reference returns the root name and steps of n when n is a reference
// that can be read again (a name of the environment, then fields and
// constant indexes), else ok is false.
func (x *explainer) reference(n ast.Node) (root string, steps []step, ok bool) {
	for depth := 0; depth < 64; depth++ {
		switch v := n.(type) {
		case *ast.IdentifierNode:
			if slices.Contains(x.lets, v.Value) || strings.HasPrefix(v.Value, "$") {
				return "", nil, false
			}
			if _, in := x.vars[v.Value]; !in && v.Value != "nodes" {
				return "", nil, false
			}
			slices.Reverse(steps)
			return v.Value, steps, true
		case *ast.ChainNode:
			n = v.Node
		case *ast.MemberNode:
			if v.Method {
				return "", nil, false
			}
			switch p := v.Property.(type) {
			case *ast.StringNode:
				steps = append(steps, step{key: p.Value, isKey: true})
			case *ast.IntegerNode:
				steps = append(steps, step{index: p.Value})
			case *ast.UnaryNode:
				i, isInt := p.Node.(*ast.IntegerNode)
				if p.Operator != "-" || !isInt {
					return "", nil, false
				}
				steps = append(steps, step{index: -i.Value})
			default:
				return "", nil, false
			}
			n = v.Node
		default:
			return "", nil, false
		}
	}
	return "", nil, false
}

// fact says what operand n was, when it is a reference: `input.n is a
// string`, or for a null where it came from. It is "" for anything else,
// and once the budget is spent.
func (x *explainer) fact(n ast.Node) string {
	if n == nil {
		return ""
	}
	root, steps, ok := x.reference(n)
	if !ok || root == "nodes" && len(steps) == 0 {
		// nodes whole is every node's state: not a value to describe.
		return ""
	}
	name := shortSource(n)
	v := x.vars[root]
	path := root
	for i, s := range steps {
		if x.budget.charge(1, 0) != nil {
			return ""
		}
		if v == nil {
			// An earlier step gave null and ?. carried it on.
			return ""
		}
		next := path + "." + s.key
		if !s.isKey || !isIdentifier(s.key) {
			if s.isKey {
				next = path + "[" + strconv.Quote(s.key) + "]"
			} else {
				next = path + "[" + strconv.Itoa(s.index) + "]"
			}
		}
		if len(next) > maxPathBytes {
			// Names of this length are not read by people: the fact is
			// left out rather than cut.
			return ""
		}
		switch c := v.(type) {
		case map[string]any:
			if !s.isKey {
				return ""
			}
			got, has := c[s.key]
			if !has {
				why := x.missing(root, path, steps, i, c, s.key)
				if i == len(steps)-1 {
					return fmt.Sprintf("%s is null (%s)", name, why)
				}
				return fmt.Sprintf("%s is null: %s is null (%s)", name, next, why)
			}
			if got == nil && i < len(steps)-1 {
				return fmt.Sprintf("%s is null: %s is null", name, next)
			}
			v = got
		case []any:
			if s.isKey {
				return ""
			}
			idx := s.index
			if idx < 0 {
				idx += len(c)
			}
			if idx < 0 || idx >= len(c) {
				return ""
			}
			v = c[idx]
			if v == nil && i < len(steps)-1 {
				return fmt.Sprintf("%s is null: %s is null", name, next)
			}
		default:
			return ""
		}
		path = next
	}
	if v == nil {
		return name + " is null"
	}
	t := TypeName(v)
	switch t {
	case "array":
		if n := lenOf(v); n != 1 {
			return fmt.Sprintf("%s is an array of %d elements", name, n)
		}
		return name + " is an array of 1 element"
	case "string":
		return fmt.Sprintf("%s is a string of %d characters", name, utf8.RuneCountInString(v.(string)))
	}
	return name + " is " + withArticle(t)
}

// isIdentifier reports whether s can be written after a dot.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && r != '$' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && (i == 0 || !(r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// maxPathBytes bounds the reference a fact names.
const maxPathBytes = 200

// Bounds of the keys a "has no key" fact lists: the nearest few, of an
// object small enough to be searched within a charge.
const (
	maxListedKeys  = 5
	maxSearchedKey = 1000
)

// missing says why key is not in c, which path names: the nodes map has
// no state of a node that has not ended; an object lists its keys nearest
// key first.
func (x *explainer) missing(root, path string, steps []step, i int, c map[string]any, key string) string {
	if root == "nodes" && i == 0 {
		return fmt.Sprintf("node %s has no state here: it has not run", quoteShort(key))
	}
	if root == "nodes" && i == 1 {
		// A state has status, output and error (names are checked before
		// acceptance): this is a map iteration's or a computed read.
		return fmt.Sprintf("%s has no key %s", path, quoteShort(key))
	}
	switch {
	case len(c) == 0:
		return fmt.Sprintf("%s has no key %s; it is an empty object", path, quoteShort(key))
	case len(c) > maxSearchedKey:
		return fmt.Sprintf("%s has no key %s; it has %d keys", path, quoteShort(key), len(c))
	}
	// Each key is compared with the one missing, a table of at most 64
	// by 64 cells (editDistance), about 40 cells a step: charged before.
	cells := int64(0)
	for k := range c {
		cells += int64(min(len(k), 64)+1) * int64(min(len(key), 64)+1)
	}
	if x.budget.charge(1+int64(len(c))+cells/40, int64(len(c))*32) != nil {
		return fmt.Sprintf("%s has no key %s", path, quoteShort(key))
	}
	type near struct {
		k string
		d int
	}
	keys := make([]near, 0, len(c))
	var scratch []int
	for k := range c {
		var d int
		d, scratch = editDistance(k, key, scratch)
		keys = append(keys, near{k, d})
	}
	// sort.Slice, not slices.SortFunc: a hint is no hot path, and
	// slices.SortFunc would compile its whole sort again for near's shape
	// (about 7 kB of the bootstrap). The keys are distinct: the order is
	// the same.
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].d != keys[j].d {
			return keys[i].d < keys[j].d
		}
		return keys[i].k < keys[j].k
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s has no key %s; it has ", path, quoteShort(key))
	if len(keys) == maxListedKeys+1 {
		keys = keys[: maxListedKeys+1 : maxListedKeys+1]
	}
	for j, k := range keys[:min(len(keys), maxListedKeys+1)] {
		if j == maxListedKeys && len(keys) > maxListedKeys+1 {
			break
		}
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteShort(k.k))
	}
	if len(keys) > maxListedKeys+1 {
		fmt.Fprintf(&b, ", … (%d keys in all)", len(keys))
	}
	return b.String()
}

// WhyNull says where the null e gave came from when e is a reference
// (`nodes.a.output.k is null (nodes.a.output has no key "k"; it has
// "key")`), for the message of a `when` that gave null; "" when e is not a
// reference or its budget is spent. It is for the failure path only: it
// parses e again.
func (ev *Evaluator) WhyNull(e *Expression) (why string) {
	defer func() {
		if recover() != nil {
			why = ""
		}
	}()
	if ev.budget.charge(1+int64(len(e.src))/8, 0) != nil {
		return ""
	}
	config := configs.Get().(*conf.Config)
	tree, err := parser.ParseWithConfig(e.src, config)
	configs.Put(config)
	if err != nil || !isReference(tree.Node) || e.readsSecrets() {
		return ""
	}
	vars, err := ev.environment()
	if err != nil {
		return ""
	}
	x := explainer{vars: vars, budget: &ev.budget}
	return x.fact(tree.Node)
}
