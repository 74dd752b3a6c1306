package lang

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/builtin"
	"github.com/runnerd/lambda-runner/protocol"
)

// evalTemplate compiles text as a template where every node is visible and
// evaluates it against env under b, stopped by ctx.
func evalTemplate(t *testing.T, ctx context.Context, env Env, text any, b Budget) (any, error) {
	t.Helper()
	var errs problemList
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return nil }}
	tp := CompileTemplateAt("w", ".with", text, sc, &errs)
	if len(errs) > 0 {
		t.Fatalf("%v: %q", text, errs)
	}
	return NewEvaluator(ctx, env, tp, b, nil).Eval(tp)
}

// dag is the let chain of the red team's F2: a0 = [1, 1], each a(i) an
// array of a(i-1) twice, so that a(depth) is 2^(depth+1) leaves in a few
// hundred bytes; with maps, each level is {l: a(i-1), r: a(i-1)}.
func dag(depth int, maps bool) string {
	var b strings.Builder
	b.WriteString("let a0 = [1, 1]; ")
	for i := 1; i <= depth; i++ {
		if maps {
			fmt.Fprintf(&b, "let a%d = {l: a%d, r: a%d}; ", i, i-1, i-1)
		} else {
			fmt.Fprintf(&b, "let a%d = [a%d, a%d]; ", i, i-1, i-1)
		}
	}
	return b.String()
}

// walkBound is how long a refused walk may take: a walk stops within the
// one-operation bound (0.1 s of work), slower under the race detector.
func walkBound() time.Duration {
	if raceDetector {
		return 2 * time.Second
	}
	return 400 * time.Millisecond
}

func wantLimit(t *testing.T, err error, took time.Duration) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != protocol.CodeLimitExceeded {
		t.Fatalf("error %v, want %s", err, protocol.CodeLimitExceeded)
	}
	if took > walkBound() {
		t.Errorf("refused after %v, want within %v", took, walkBound())
	}
}

// TestHostileSharedReferences (F2): a value of shared references is
// exponentially larger written out than held. Every walk over one (the
// value handed on, toJSON, string, ==, in, flatten, max, min, mean,
// median, uniq, interpolation) stops at the evaluation's budget and fails
// LIMIT_EXCEEDED fast, whatever the depth: before, each walked the 2^depth
// leaves (depth 40 never ended).
func TestHostileSharedReferences(t *testing.T) {
	defaults := Budget{MaxSteps: 10_000_000, MaxMemory: 16 << 20}
	small := Budget{MaxSteps: 1_000_000, MaxMemory: 1 << 20}
	unbounded := Budget{MaxSteps: -1, MaxMemory: -1}
	type tc struct {
		name string
		text string
	}
	var tests []tc
	for _, depth := range []int{24, 62} {
		for _, maps := range []bool{false, true} {
			d := dag(depth, maps)
			top := fmt.Sprintf("a%d", depth)
			prev := fmt.Sprintf("a%d", depth-1)
			kind := "arrays"
			if maps {
				kind = "maps"
			}
			add := func(op, text string) {
				tests = append(tests, tc{fmt.Sprintf("%s of %s depth %d", op, kind, depth), text})
			}
			add("the value", "${{ "+d+top+" }}")
			add("the value in an array", "${{ "+d+"["+top+"] }}")
			add("toJSON", "${{ "+d+"len(toJSON("+top+")) }}")
			add("string", "${{ "+d+"len(string("+top+")) }}")
			add("interpolated", "x${{ "+d+top+" }}")
			if maps {
				add("==", "${{ "+d+top+" == {l: "+prev+", r: "+prev+"} }}")
				add("in", "${{ "+d+top+" in [{l: "+prev+", r: "+prev+"}] }}")
				add("uniq", "${{ "+d+"len(uniq([{l: "+prev+", r: "+prev+"}, "+top+"])) }}")
				continue
			}
			add("==", "${{ "+d+top+" == ["+prev+", "+prev+"] }}")
			add("!=", "${{ "+d+top+" != ["+prev+", "+prev+"] }}")
			add("in", "${{ "+d+top+" in [["+prev+", "+prev+"]] }}")
			add("uniq", "${{ "+d+"len(uniq([["+prev+", "+prev+"], "+top+"])) }}")
			add("flatten", "${{ "+d+"len(flatten("+top+")) }}")
			add("max", "${{ "+d+"max("+top+") }}")
			add("min", "${{ "+d+"min("+top+") }}")
			add("mean", "${{ "+d+"mean("+top+") }}")
			add("median", "${{ "+d+"median("+top+") }}")
		}
	}
	// One long string held many times (no collection shared): the value
	// is 100,000 copies of a megabyte written out.
	s := "let s = repeat('x', 1000000); let m = map(1..100000, {s}); "
	tests = append(tests,
		tc{"a long string held 100,000 times", "${{ " + s + "m }}"},
		tc{"a long string held 100,000 times, toJSON", "${{ " + s + "len(toJSON(m)) }}"},
		tc{"a long string held 100,000 times, interpolated", "x${{ " + s + "m }}"},
		tc{"a long string held 100,000 times, in an object", map[string]any{"a": "${{ " + s + "m }}", "b": 1}["a"].(string)},
	)
	for _, tt := range tests {
		for _, b := range []struct {
			name string
			b    Budget
		}{{"defaults", defaults}, {"small", small}, {"unbounded", unbounded}} {
			t.Run(tt.name+"/"+b.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				_, err := evalTemplate(t, ctx, boundEnv{&testEnv{}, 32 << 20}, tt.text, b.b)
				wantLimit(t, err, time.Since(start))
			})
		}
	}
}

// boundEnv is an Env that bounds a template's value.
type boundEnv struct {
	*testEnv
	bound int64
}

func (e boundEnv) MaxValueBytes() int64 { return e.bound }

// TestSharedReferencesTemplate: a template whose members each give one
// large value (here the same one) hands on the whole, measured as written
// out: 4,000 references to a 1 MB input string are refused, two are not.
func TestSharedReferencesTemplate(t *testing.T) {
	env := &testEnv{input: map[string]any{"s": strings.Repeat("x", 1<<20)}}
	b := Budget{MaxSteps: 10_000_000, MaxMemory: 16 << 20}
	many := make([]any, 4000)
	for i := range many {
		many[i] = "${{ input.s }}"
	}
	start := time.Now()
	_, err := evalTemplate(t, context.Background(), env, map[string]any{"a": many}, b)
	wantLimit(t, err, time.Since(start))
	// With no bound from the Env, DefaultMaxValueBytes applies.
	start = time.Now()
	_, err = evalTemplate(t, context.Background(), &testEnv{}, "${{ "+dag(40, false)+"a40 }}", b)
	wantLimit(t, err, time.Since(start))
	if _, err := evalTemplate(t, context.Background(), env, []any{"${{ input.s }}", "${{ input.s }}"}, b); err != nil {
		t.Fatalf("two references: %v", err)
	}
}

// The bounded walks agree with the unbounded ones below their limit.
func TestBoundedWalksAgree(t *testing.T) {
	for _, v := range []any{
		nil, true, "x", 1.5, []any{}, map[string]any{}, []any{1.0, "ab", nil, []any{map[string]any{"k": []any{"v"}}}},
		map[string]any{"a": []any{1.0, 2.0}, "b": map[string]any{"c": "<&>"}}, []string{"a", "bc"}, map[string]string{"k": "v"},
	} {
		size := SizeOf(v)
		if got := SizeWithin(v, size); got != size {
			t.Errorf("%#v: SizeWithin at its size %d = %d", v, size, got)
		}
		if got := SizeWithin(v, size-1); got <= size-1 {
			t.Errorf("%#v: SizeWithin below its size %d = %d, want over", v, size, got)
		}
		for _, indent := range []bool{false, true} {
			n := jsonSize(v, indent, 0)
			if got := jsonSizeWithin(v, indent, 0, n); got != n {
				t.Errorf("%#v: jsonSizeWithin at its size %d = %d", v, n, got)
			}
			if got := jsonSizeWithin(v, indent, 0, n-1); got <= n-1 {
				t.Errorf("%#v: jsonSizeWithin below its size %d = %d, want over", v, n, got)
			}
		}
	}
}

// TestUniqAgreesWithTheBuiltin: uniq, hashed, keeps what the builtin keeps,
// in its order, for every kind of element runtime.Equal compares.
func TestUniqAgreesWithTheBuiltin(t *testing.T) {
	i, _ := builtin.Index["uniq"]
	want := builtin.Builtins[i].Func
	now := time.Unix(1700000000, 5)
	for _, a := range []any{
		[]any{}, []any{1, 1.0, 2, 2.5, 2.5, "a", "a", "b", nil, nil, true, false, true},
		[]any{[]any{1.0}, []any{1}, []any{1.0, 2.0}, []any{}, []any{}, map[string]any{"k": 1.0}, map[string]any{"k": 1}, map[string]any{}},
		[]any{now, now.In(time.UTC), now.Add(1), time.Second, time.Second, 1, []string{"a"}, []any{"a"}},
		[]string{"b", "a", "b", "c", "a"}, []int{3, 1, 3, 2}, []float64{0, math.Copysign(0, -1), 1, math.NaN(), math.NaN()},
	} {
		got, err := (&exprBudget{}).uniq(a)
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := want(a)
		// NaN is kept each time, by both; DeepEqual finds two NaNs unequal.
		if !reflect.DeepEqual(got, exp) && fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", exp) {
			t.Errorf("uniq(%v) = %v, the builtin gives %v", a, got, exp)
		}
	}
}

// TestHostileCollectionCost (F3, F4, F5): builtins over typed slices, the
// comparisons of uniq and `in`, and the builtins of a fixed cost that do
// real work are charged what they do, before they do it: each case ends
// LIMIT_EXCEEDED fast (before: join built a gigabyte under a 16 MiB
// budget, or 8 GB and the process died; uniq(1..100000) ran minutes; `in`
// over large arrays ran 10 s under a 1 s budget; a million timezone()
// calls, charged a million steps, took 7 s).
func TestHostileCollectionCost(t *testing.T) {
	// A fifth of the default step budget: a refusal by steps comes after
	// the work they stand for, 0.2 s of it (several times that under the
	// race detector).
	b := Budget{MaxSteps: 2_000_000, MaxMemory: 16 << 20}
	for _, tt := range []struct{ name, src string }{
		// F3: join over the []string split gives.
		{"join split by a 100 KB separator", "len(join(split(repeat('x', 10000), ''), repeat(repeat('y', 1000), 100)))"},
		{"join split by an 800 KB separator", "len(join(split(repeat('x', 10000), ''), repeat(repeat('y', 1000), 800)))"},
		{"join splitAfter by a 100 KB separator", "len(join(splitAfter(repeat('x,', 10000), ','), repeat('y', 100000)))"},
		{"join split pieces of a megabyte", "len(join(split(repeat(repeat('x', 1000000) + ',', 8), ','), repeat('y', 2000000)))"},
		{"sort split long strings", "len(sort(split(repeat(repeat('x', 100000) + ',', 150), ',')))"},
		{"uniq split long strings per item", "len(map(1..1000, {len(uniq(split(repeat(repeat('x', 10000) + ',', 100), ',')))}))"},
		{"in split long strings per item", "len(filter(1..1000, {'z' in split(repeat(repeat('x', 10000) + ',', 100), ',')}))"},
		// F4: uniq and `in` compare deeply.
		{"uniq of distinct arrays of one length", "len(uniq(map(1..20000, {[#, 1, 2, 3, 4, 5, 6, 7]})))"},
		{"uniq of large equal-length arrays", "let big = map(1..10000, #); len(uniq(map(1..200, {# == 1 ? big : map(big, {# + 1})})))"},
		{"in over copies of a large array", "let big = map(1..100000, #); let other = map(1..100000, # == 100000 ? 0 : #); other in map(1..20000, big)"},
		{"in over copies of a large object", "let big = fromJSON(toJSON(map(1..50000, { {'k': #} }))); let other = map(1..50000, { {'k': # == 50000 ? 0 : #} }); other in map(1..3000, big)"},
		{"not in over copies of a large array", "let big = map(1..100000, #); let other = map(1..100000, # == 100000 ? 0 : #); other not in map(1..20000, big)"},
		// F5: builtins of a fixed cost that do real work.
		{"timezone a million times", "let r = 1..1000; all(r, all(r, timezone('America/Argentina/ComodRivadavia') != nil))"},
		{"timezone in a map", "len(map(1..200000, timezone('Europe/Paris')))"},
		{"now in a timezone", "let r = 1..1000; all(r, all(r, now(timezone('Asia/Tokyo')).Year() > 0))"},
		{"date in a named zone", "let r = 1..1000; all(r, all(r, date('2020-01-02', '2006-01-02', 'Europe/Paris').Year() > 0))"},
		{"date of a long text tried in every layout", "let s = repeat('x', 100000); len(filter(1..1000, {date(s) != nil}))"},
		{"a time formatted by a long layout", "let d = date('2020-01-02'); let l = repeat('Monday January ', 60000); len(filter(1..1000, {len(d.Format(l)) > 0}))"},
		{"now formatted by a long layout", "let l = repeat('2006-01-02 ', 100000); len(filter(1..1000, {now().Format(l) != ''}))"},
		{"duration of a long text", "let s = repeat('1', 1000000) + 's'; len(filter(1..1000, {duration(s) > duration('0s')}))"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err := evalTemplate(t, ctx, &testEnv{}, "${{ "+tt.src+" }}", b)
			var e *Error
			if errors.As(err, &e) && e.Code == protocol.CodeExpressionError && strings.Contains(tt.name, "long text") {
				// A parse failure ends the evaluation too: what matters
				// is that it came fast.
				err = &Error{Code: protocol.CodeLimitExceeded}
			}
			if took := time.Since(start); took > 3*walkBound() {
				t.Errorf("took %v", took)
			}
			var le *Error
			if !errors.As(err, &le) || le.Code != protocol.CodeLimitExceeded {
				t.Fatalf("error %v, want %s", err, protocol.CodeLimitExceeded)
			}
		})
	}
}

// TestLongOperationsSeeTheContext (F4): with no step budget, uniq and `in`
// making large comparisons see a timeout between two of them, within the
// one-operation bound.
func TestLongOperationsSeeTheContext(t *testing.T) {
	for _, src := range []string{
		"let big = map(1..100000, #); let other = map(1..100000, # == 100000 ? 0 : #); other in map(1..20000, big)",
		"len(uniq(map(1..1000, {let i = #; map(1..400, {# == 400 ? i : #})})))",
	} {
		t.Run(src, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := evalTemplate(t, ctx, &testEnv{}, "${{ "+src+" }}", Budget{MaxSteps: -1, MaxMemory: -1})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v, want the deadline", err)
			}
			if took := time.Since(start); took > 300*time.Millisecond+walkBound() {
				t.Errorf("stopped after %v", took)
			}
		})
	}
}

// TestCostsStayReasonable: what the new charges cost an ordinary
// evaluation: none of these is refused under the default budget.
func TestCostsStayReasonable(t *testing.T) {
	b := Budget{MaxSteps: 10_000_000, MaxMemory: 16 << 20}
	for _, tt := range []struct {
		src  string
		want any
	}{
		{"len(uniq(1..100000))", 100000},
		{"len(uniq(map(1..100000, # % 7)))", 7},
		{"uniq(['a', 'b', 'a', 1, 1.0, [1], [1.0]])", []any{"a", "b", 1, []any{1}}},
		{"[1, 2] in [[1], [1, 2]]", true},
		{"{'a': 1} in [{'a': 2}, {'a': 1}]", true},
		{"[3] in [[1], [2]]", false},
		{"[3] not in [[1], [2]]", true},
		{"let s = split('a,b', ','); 'b' in s", true},
		{"sort(split('a,c,b', ','))", []any{"a", "b", "c"}},
		{"join(split('a,b,c', ','), '-')", "a-b-c"},
		{"len(flatten([[1, [2, [3]]], [4]]))", 4},
		{"max([1, [5, [3]]])", 5},
		{"median([[1, 2], [3]])", 2.0},
		{"timezone('UTC').String()", "UTC"},
		{"date('2020-01-02').Year()", 2020},
		{"date('2020-01-02').Format('2006/01/02')", "2020/01/02"},
		{"let l = '2006' + '-01'; date('2020-01-02').Format(l)", "2020-01"},
		{"let a = [1, 2]; len(toJSON([a, a, a]))", 68},
		{"let a = [1, 2]; [a, a] == [[1, 2], [1, 2]]", true},
	} {
		got, err := evalTemplate(t, context.Background(), &testEnv{}, "${{ "+tt.src+" }}", b)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.src, got, tt.want)
		}
	}
}
