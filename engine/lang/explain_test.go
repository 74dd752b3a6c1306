package lang

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/expr-lang/expr/builtin"
	"github.com/runnerd/lambda-runner/protocol"
)

// goish is what no run-time message may hold: Go's type names, reflection,
// package paths, Go's runtime. It is the test's own list, stricter than
// the one explain.go falls back on.
var goish = regexp.MustCompile(`interface|map\[|\[\]|\bu?int(8|16|32|64)?\b|float(32|64)|complex|reflect|<nil>|%!|runtime|github\.com|expr-lang|strconv|\btime\.|encoding|json:|\bfunc\b|\bslice\b|\bptr\b|\bkind\b|\bValue\b|panic|goroutine|\*[a-zA-Z]|\bnil\b|\bvm\b`)

// intBuiltin is the builtin int named in a message: removed before the
// words are judged.
var intBuiltin = regexp.MustCompile(`\bint\(|\bint (takes|cannot|converts)\b`)

// langTypes are the words a message names a type with.
var langTypes = regexp.MustCompile(`\b(null|number|string|array|object|boolean|date|duration)\b`)

// Values of every type the language has, by the reference that reads
// them: X in a row's template is replaced by each.
var explainValues = []struct {
	ref, typ string
}{
	{"input.missing", "null"},
	{"input.null", "null"},
	{"input.num", "number"},
	{"input.str", "string"},
	{"input.arr", "array"},
	{"input.obj", "object"},
	{"input.bool", "boolean"},
	{"now()", "date"},
	{"duration('1h')", "duration"},
}

// explainOperators are the operators, each with its operand in every
// place: X is replaced by a value of each type.
var explainOperators = []string{
	"X + 1", "1 + X", "X + 'a'", "'a' + X", "X + X", "X - 1", "1 - X", "X * 2", "2 * X",
	"X / 2", "2 / X", "X % 2", "7 % X", "X ** 2", "2 ** X", "-X", "+X",
	"X == 1", "X != 'a'", "X < 1", "1 < X", "X > 'a'", "X <= 1", "X >= 1", "X < X",
	"X and true", "true and X", "X or false", "false or X", "not X", "!X", "X && true", "X || false",
	"1 in X", "'k' in X", "X in [1, 2]", "X in input.arr", "X not in input.obj",
	"X matches 'a'", "'a' matches X", "X contains 'a'", "'abc' contains X",
	"X startsWith 'a'", "'abc' startsWith X", "X endsWith 'a'", "'abc' endsWith X",
	"X..3", "1..X", "X ? 1 : 2", "if X { 1 } else { 2 }", "X ?? 1",
	"X[0]", "X[5]", "X[-1]", "[1, 2][X]", "X['k']", "X.k", "X.k.j", "X?.k", "X?.k.j", "input.obj[X]",
	"X[1:2]", "X[:1]", "[1, 2, 3][X:]", "[1, 2, 3][:X]", "'abc'[X:]",
	"X | upper()", "let v = X; v + 1", "map([1], X)", "map([X], # + 1)", "filter([X], #.k > 1)",
}

// explainBuiltins are rows for every builtin expr offers (the test fails
// for one without a row): X is replaced by a value of each type. A
// builtin that no argument can fail (toJSON takes anything) still has a
// row, run for panics and words.
var explainBuiltins = map[string][]string{
	"all":           {"all(X, #)", "all([1], X)"},
	"none":          {"none(X, #)", "none([1], X)"},
	"any":           {"any(X, #)", "any([1], X)"},
	"one":           {"one(X, #)", "one([1], X)"},
	"filter":        {"filter(X, # > 1)", "filter([1], X)"},
	"map":           {"map(X, #)", "map(X, .k)", "map([1, 2], # + X)"},
	"find":          {"find(X, # > 1)"},
	"findIndex":     {"findIndex(X, # > 1)"},
	"findLast":      {"findLast(X, # > 1)"},
	"findLastIndex": {"findLastIndex(X, # > 1)"},
	"count":         {"count(X, #)", "count(X)"},
	"sum":           {"sum(X)", "sum(X, #)", "sum([1, 2], X)"},
	"groupBy":       {"groupBy(X, #)", "groupBy([{k: 1}], .k + X)"},
	"sortBy":        {"sortBy(X, #)", "sortBy([1, 2], #, X)", "sortBy([{k: 1}, {k: 'a'}], .k)"},
	"reduce":        {"reduce(X, #acc + #)", "reduce(X, #acc + #, 0)", "reduce([1, 2], #acc + #, X)"},
	"len":           {"len(X)"},
	"type":          {"type(X)"},
	"abs":           {"abs(X)"},
	"ceil":          {"ceil(X)"},
	"floor":         {"floor(X)"},
	"round":         {"round(X)"},
	"int":           {"int(X)", "int('x')"},
	"float":         {"float(X)", "float('x')"},
	"string":        {"string(X)"},
	"trim":          {"trim(X)", "trim('a', X)"},
	"trimPrefix":    {"trimPrefix(X)", "trimPrefix('a', X)"},
	"trimSuffix":    {"trimSuffix(X)", "trimSuffix('a', X)"},
	"upper":         {"upper(X)"},
	"lower":         {"lower(X)"},
	"split":         {"split(X, ',')", "split('a,b', X)", "split('a,b', ',', X)"},
	"splitAfter":    {"splitAfter(X, ',')", "splitAfter('a,b', X)"},
	"replace":       {"replace(X, 'a', 'b')", "replace('a', X, 'b')", "replace('a', 'a', X)"},
	"repeat":        {"repeat(X, 2)", "repeat('a', X)"},
	"join":          {"join(X)", "join(X, ',')", "join(['a'], X)", "join([X, 'a'])"},
	"indexOf":       {"indexOf(X, 'a')", "indexOf('a', X)"},
	"lastIndexOf":   {"lastIndexOf(X, 'a')", "lastIndexOf('a', X)"},
	"hasPrefix":     {"hasPrefix(X, 'a')", "hasPrefix('a', X)"},
	"hasSuffix":     {"hasSuffix(X, 'a')", "hasSuffix('a', X)"},
	"max":           {"max(X)", "max(1, X)", "max([1, X])"},
	"min":           {"min(X)", "min(1, X)", "min([1, X])"},
	"mean":          {"mean(X)", "mean([1, X])"},
	"median":        {"median(X)", "median([1, X])"},
	"toJSON":        {"toJSON(X)"},
	"fromJSON":      {"fromJSON(X)", "fromJSON('{')", "fromJSON('[1,')"},
	"toBase64":      {"toBase64(X)"},
	"fromBase64":    {"fromBase64(X)", "fromBase64('!!')"},
	"now":           {"now() + X", "now().Add(X)", "now().Format(X)", "now().Sub(X)", "now() - X", "now() < X"},
	"duration":      {"duration(X)", "duration('zz')", "duration('1h') * X", "X - duration('1h')"},
	"date":          {"date(X)", "date('nope')", "date('2024', X)", "date('2024-01-02', '2006-01-02', X)", "date(X).Year()"},
	"timezone":      {"timezone(X)", "timezone('Nowhere/Never')", "now().In(X)"},
	"first":         {"first(X)"},
	"last":          {"last(X)"},
	"get":           {"get(X, 'k')", "get(X, 0)", "get(input.obj, X)", "get(input.arr, X)"},
	"take":          {"take(X, 1)", "take([1], X)"},
	"keys":          {"keys(X)"},
	"values":        {"values(X)"},
	"toPairs":       {"toPairs(X)"},
	"fromPairs":     {"fromPairs(X)", "fromPairs([X])", "fromPairs([[1]])"},
	"reverse":       {"reverse(X)"},
	"uniq":          {"uniq(X)"},
	"concat":        {"concat(X)", "concat([1], X)"},
	"flatten":       {"flatten(X)"},
	"sort":          {"sort(X)", "sort([2, 1], X)", "sort([1, 'a'])"},
	"bitand":        {"bitand(X, 1)", "bitand(1, X)"},
	"bitor":         {"bitor(X, 1)"},
	"bitxor":        {"bitxor(X, 1)"},
	"bitnand":       {"bitnand(X, 1)"},
	"bitshl":        {"bitshl(X, 1)", "bitshl(1, X)"},
	"bitshr":        {"bitshr(X, 1)"},
	"bitushr":       {"bitushr(X, 1)"},
	"bitnot":        {"bitnot(X)"},
}

// Every builtin expr offers has a row: a builtin added by an upgrade of
// expr fails here until its messages have been looked at.
func TestExplainEveryBuiltinHasARow(t *testing.T) {
	for _, f := range builtin.Builtins {
		if _, ok := explainBuiltins[f.Name]; !ok {
			t.Errorf("builtin %s has no row in explainBuiltins", f.Name)
		}
	}
	for name := range explainBuiltins {
		if _, ok := builtin.Index[name]; !ok {
			t.Errorf("explainBuiltins has a row for %s, which expr does not offer", name)
		}
	}
}

func explainEnv() *testEnv {
	return &testEnv{
		input: map[string]any{
			"null": nil, "num": 3.5, "str": "str", "bool": true,
			"arr": []any{1.0, "a"}, "obj": map[string]any{"k": 1.0, "key": "v"},
		},
		nodes: map[string]testNode{"a": {status: "completed", output: map[string]any{"order": []any{map[string]any{"total": 1.0}}, "total": 2.0}}},
	}
}

// runExplained compiles and evaluates src where every node is visible;
// ok is false when it does not compile (a wrong type the checker sees).
func runExplained(t *testing.T, env Env, src string, b Budget) (any, error, bool) {
	t.Helper()
	var errs problemList
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return []string{"a"} }}
	tmpl := CompileTemplate("v", "${{ "+src+" }}", sc, &errs)
	if len(errs) > 0 {
		return nil, nil, false
	}
	v, err := NewEvaluator(context.Background(), env, tmpl, b, nil).Eval(tmpl)
	return v, err, true
}

// checkWords fails t when a run-time message of src has a word of Go, or
// names no type of the language.
func checkWords(t *testing.T, src string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: %v is not an *Error", src, err)
		return
	}
	// The expression's own text is quoted first: the words are judged after it.
	prefix := `expression "` + strings.ReplaceAll(src, `"`, `\"`) + `"`
	rest, ok := strings.CutPrefix(e.Message, prefix)
	if !ok {
		t.Errorf("%s: message %q does not begin with the expression", src, e.Message)
		return
	}
	// int is a builtin of the language, and int(x) a hint.
	words := intBuiltin.ReplaceAllString(rest, "")
	if w := goish.FindString(words); w != "" {
		t.Errorf("%s: message has %q: %s", src, w, e.Message)
	}
	if e.Code == protocol.CodeExpressionError && !langTypes.MatchString(rest) && !strings.Contains(rest, "JSON") && !strings.Contains(rest, "base64") && !strings.Contains(rest, "zone") && !strings.Contains(rest, "division by zero") {
		t.Errorf("%s: message names no type: %s", src, e.Message)
	}
}

// Every operator and builtin, given a value of each type in each place:
// what fails says so in the language's words, and names the type it got.
func TestExplainWords(t *testing.T) {
	env := explainEnv()
	rows := slices.Clone(explainOperators)
	for _, f := range builtin.Builtins {
		rows = append(rows, explainBuiltins[f.Name]...)
	}
	failed, ran := 0, 0
	for _, row := range rows {
		rowFailed := false
		for _, v := range explainValues {
			src := strings.ReplaceAll(row, "X", v.ref)
			_, err, ok := runExplained(t, env, src, Budget{MaxSteps: 1e6, MaxMemory: 1 << 20})
			if !ok {
				continue
			}
			ran++
			if err == nil {
				continue
			}
			failed++
			rowFailed = true
			checkWords(t, src, err)
			var e *Error
			if errors.As(err, &e) && e.Code == protocol.CodeExpressionError && strings.Contains(row, "X") && !strings.Contains(e.Message, v.typ) && !typeOfOtherOperand(e.Message) {
				t.Errorf("%s: message does not name %s: %s", src, v.typ, e.Message)
			}
		}
		if !rowFailed && !neverFails[row] {
			t.Errorf("%s: no value of any type made it fail (a row that cannot fail tests nothing: add it to neverFails)", row)
		}
	}
	if ran < 1000 || failed < 500 {
		t.Errorf("%d evaluations, %d failures: the table no longer exercises the messages", ran, failed)
	}
	t.Logf("%d evaluations, %d failures", ran, failed)
}

// typeOfOtherOperand reports whether a message is about an operand other
// than the one the row varies (sort([1, 'a']) fails whatever X is).
func typeOfOtherOperand(msg string) bool { return langTypes.MatchString(msg) }

// neverFails are rows no value makes fail: they run for panics and words.
var neverFails = map[string]bool{
	"X == 1": true, "X != 'a'": true, "X ?? 1": true, "X?.k": true, "X in [1, 2]": true, "X in input.arr": true,
	"type(X)": true, "string(X)": true, "toJSON(X)": true, "X and true": true, "X or false": true, "X?.k.j": true,
	"get(X, 'k')": true, "get(X, 0)": true, "get(input.obj, X)": true, "get(input.arr, X)": true,
	"true and X": true, "+X": true, "map([1], X)": true, "first(X)": true, "last(X)": true, "false or X": true, "X && true": true, "X || false": true,
}

// The messages of issue 46, and the shape every message has.
func TestExplainMessages(t *testing.T) {
	tests := []struct{ src, want string }{
		{`sum(map(nodes.a.output.ordr, .total))`, `expression "sum(map(nodes.a.output.ordr, .total))" at 1:5 (map(nodes.a.output.ordr, .total)): map takes an array, got null; nodes.a.output.ordr is null (nodes.a.output has no key "ordr"; it has "order", "total")`},
		{`nodes.a.output.totl + 1`, `expression "nodes.a.output.totl + 1" at 1:21: cannot compute null + number; nodes.a.output.totl is null (nodes.a.output has no key "totl"; it has "total", "order")`},
		{`nodes.a.output.order + 1`, `expression "nodes.a.output.order + 1" at 1:22: cannot compute array + number; nodes.a.output.order is an array of 1 element`},
		{`input.obj.kye.x`, `expression "input.obj.kye.x" at 1:15: cannot read "x" of null; input.obj.kye is null (input.obj has no key "kye"; it has "key", "k")`},
		{`upper(input.num)`, `expression "upper(input.num)" at 1:1: upper takes a string, got a number; input.num is a number`},
		{`input.arr[5]`, `expression "input.arr[5]" at 1:10: index 5 is out of range: the array has 2 elements; input.arr is an array of 2 elements`},
		{`input.str.k`, `expression "input.str.k" at 1:11: cannot read "k" by name: only an object has named fields (an array or a string is indexed by number); input.str is a string of 3 characters`},
		{`nodes.a.output.order[0].totl * 2`, `expression "nodes.a.output.order[0].totl * 2" at 1:30: cannot compute null * number; nodes.a.output.order[0].totl is null (nodes.a.output.order[0] has no key "totl"; it has "total")`},
		{`input.null + 1`, `expression "input.null + 1" at 1:12: cannot compute null + number; input.null is null`},
		{`input.num % 2`, `expression "input.num % 2" at 1:11: cannot compute number % number: % takes whole numbers, and a number read from JSON is not one (int(x) % n converts it); input.num is a number`},
		{"input.obj\n  .kye + 1", `expression "input.obj\n  .kye + 1" at 2:8: cannot compute null + number; input.obj.kye is null (input.obj has no key "kye"; it has "key", "k")`},
	}
	for _, tt := range tests {
		_, err, ok := runExplained(t, explainEnv(), tt.src, Budget{MaxSteps: 1e6, MaxMemory: 1 << 20})
		if !ok {
			t.Fatalf("%s does not compile", tt.src)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != protocol.CodeExpressionError {
			t.Fatalf("%s: got %v, want an EXPRESSION_ERROR", tt.src, err)
		}
		if e.Message != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.src, e.Message, tt.want)
		}
	}
}

// A message about an object's keys lists the nearest few, and only of an
// object small enough to search; what it quotes is cut short.
func TestExplainKeysBounded(t *testing.T) {
	long := strings.Repeat("k", 500)
	many := map[string]any{}
	for i := range maxSearchedKey + 1 {
		many["key"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676%26))] = 1.0
	}
	some := map[string]any{}
	for _, k := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"} {
		some[k] = 1.0
	}
	env := &testEnv{input: map[string]any{"long": map[string]any{long: 1.0}, "many": many, "some": some, "empty": map[string]any{}}}
	tests := []struct{ src, want string }{
		{"input.long.kk + 1", `input.long has no key "kk"; it has "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"…)`},
		{"input.many.kex + 1", `input.many has no key "kex"; it has ` + strconv.Itoa(len(many)) + ` keys)`},
		{"input.some.gama + 1", `input.some has no key "gama"; it has "gamma", "beta", "eta", "zeta", "alpha", … (8 keys in all))`},
		{"input.empty.k + 1", `input.empty has no key "k"; it is an empty object)`},
	}
	for _, tt := range tests {
		_, err, _ := runExplained(t, env, tt.src, Budget{MaxSteps: 1e6, MaxMemory: 1 << 20})
		if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want it to end %s", tt.src, err, tt.want)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("%s: a message of %d bytes", tt.src, len(err.Error()))
		}
	}
}

// FuzzExplainWords evaluates any expression against values of every type:
// a run-time message never has a word of Go in it. The seeds are the
// operator rows; go test -fuzz=FuzzExplainWords ./engine/lang/ explores
// further.
func FuzzExplainWords(f *testing.F) {
	for _, row := range explainOperators {
		f.Add(strings.ReplaceAll(row, "X", "input.obj"))
	}
	for _, rows := range explainBuiltins {
		for _, row := range rows {
			f.Add(strings.ReplaceAll(row, "X", "input.missing"))
		}
	}
	env := explainEnv()
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return []string{"a"} }}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := compileExpr(src, sc)
		if err != nil {
			return
		}
		ev := NewEvaluator(context.Background(), env, e.Template(), Budget{MaxSteps: 100_000, MaxMemory: 1 << 20}, nil)
		_, err = ev.run(e)
		var le *Error
		if !errors.As(err, &le) || le.Code != protocol.CodeExpressionError {
			return
		}
		rest, ok := strings.CutPrefix(le.Message, fmt.Sprintf("expression %q", src))
		if !ok {
			t.Fatalf("message %q does not begin with the expression", le.Message)
		}
		if w := goish.FindString(intBuiltin.ReplaceAllString(rest, "")); w != "" && !strings.Contains(src, w) {
			t.Errorf("%s: message has %q: %s", src, w, le.Message)
		}
	})
}

// A `when` that gave null is told where the null came from.
func TestWhyNull(t *testing.T) {
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return []string{"a"} }}
	tests := []struct{ src, want string }{
		{"nodes.a.output.totl", `nodes.a.output.totl is null (nodes.a.output has no key "totl"; it has "total", "order")`},
		{"input.null", "input.null is null"},
		{"input.obj?.kye?.x", `input.obj?.kye?.x is null: input.obj.kye is null (input.obj has no key "kye"; it has "key", "k")`},
		{"input.missing == nil ? nil : true", ""},
	}
	for _, tt := range tests {
		var errs problemList
		e := CompileWhen("when", tt.src, sc, &errs)
		if len(errs) > 0 {
			t.Fatalf("%s: %q", tt.src, errs)
		}
		ev := NewEvaluator(context.Background(), explainEnv(), e.Template(), Budget{MaxSteps: 1e6}, nil)
		if _, err := ev.Run(e); err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got := ev.WhyNull(e); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.src, got, tt.want)
		}
	}
}

// What the type check says before an expression runs (its operands'
// static types: a date, a duration, a literal) is in the language's words
// too, at the same position: no Go type reaches a 400.
func TestExplainCompileWords(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"now() + 1", "cannot compute a date + a number (1:7)"},
		{"now() > 1", "cannot compare a date > a number"},
		{"'a' - 1", "cannot compute a string - a number"},
		{"1 + true", "cannot compute a number + a boolean"},
		{"duration('1h') * 'x'", "cannot compute a duration * a string"},
		{"[1] + 1", "cannot compute an array + a number"},
		{"nil + 1", "cannot compute null + a number"},
		{"1 in 2", "in needs an array or an object on its right, got a number"},
		{"'a' matches 1", "matches takes two strings, got a string and a number"},
		{"-'a'", "cannot apply - to a string"},
		{"!1", "cannot apply ! to a number"},
		{"len(1)", "len cannot take a number"},
		{"abs('x')", "abs cannot take a string"},
		{"int(now())", "int cannot take a date"},
		{"upper(1)", "upper takes a string, got a number"},
		{"date('2020') < 3", "cannot compare a date < a number"},
	} {
		_, err := compileExpr(tt.src, &Scope{})
		if err == nil {
			t.Errorf("%s: compiled", tt.src)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %q, want it to say %q", tt.src, msg, tt.want)
		}
		rest := strings.TrimPrefix(msg, `expression "`+strings.ReplaceAll(tt.src, `"`, `\"`)+`"`)
		if w := goish.FindString(intBuiltin.ReplaceAllString(rest, "")); w != "" {
			t.Errorf("%s: %q holds the Go word %q", tt.src, msg, w)
		}
	}
}
