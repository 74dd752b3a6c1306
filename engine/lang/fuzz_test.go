package lang

import (
	"context"
	"errors"
	"testing"
	"time"
)

// FuzzExprEval evaluates any expression an author could write under small
// budgets: it never panics, and it ends (with a value, EXPRESSION_ERROR or
// LIMIT_EXCEEDED) within its budget, well before the context would stop it.
//
// The seed corpus, the hostile payloads among it, runs with plain go test;
// go test -fuzz=FuzzExprEval ./engine/lang/ explores further.
func FuzzExprEval(f *testing.F) {
	for _, s := range []string{
		"input.a + 1",
		"let s0 = 'xxxxxxxx'; let s1 = s0 + s0; let s2 = s1 + s1; let s3 = s2 + s2; let s4 = s3 + s3; let s5 = s4 + s4; s5 + s5 + s5",
		"repeat(repeat('x', 1000000), 1000)",
		"sum(input.a, {sum(input.a, {# + 1})})",
		"none(input.a, {any(input.a, {# > 1})})",
		"reduce(1..40, #acc + #acc, 'xy')",
		"join(split(repeat('ab', 100000), ''), ' ')",
		"toJSON(map(input.a, {[#, #, #]}))",
		"map(1..999999, 1..999999)",
		"len(string(input)) + len(toJSON(input))",
		"groupBy(input.a, {# % 7})",
		"sortBy(map(input.a, {{'k': #}}), {.k})",
		"upper(replace(repeat('a', 1000), 'a', repeat('b', 1000)))",
		"fromJSON(toJSON(input)).a[0]",
		"concat(input.a, input.a, input.a)",
		"flatten(map(input.a, {input.a}))",
		"int('x')",
		"input.missing.deeper",
		"nodes[input.k].output + 1",
		"map(1..100000, nodes[string(#)])",
		"len(nodes) + len(keys(nodes))",
		"nodes?.[string(1)]?.status",
		"let n = nodes; n['a']",
		"nodes[nodes.n0.output].status",
		"nodes[input.a]",
	} {
		f.Add(s)
	}
	a := make([]any, 2000)
	for i := range a {
		a[i] = float64(i)
	}
	input := map[string]any{"a": a, "k": "n0"}
	// Two nodes in scope, ended: a dynamic read may find them.
	up := &manyUpstream{n: 2}
	nodes := map[string]testNode{"n0": {status: "completed", output: "n1"}, "n1": {status: "failed", err: map[string]any{"code": "X", "message": "m"}}}
	sc := &Scope{Upstream: up, Item: true}
	b := Budget{MaxSteps: 200_000, MaxMemory: 1 << 20}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := compileExpr(src, sc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ev := NewEvaluator(ctx, &testEnv{input: input, nodes: nodes, hasItem: true, item: 1.0}, e.Template(), b, up)
		start := time.Now()
		_, err = ev.run(e)
		var stopped *exprStopped
		if errors.As(err, &stopped) {
			t.Fatalf("%q ran until its context ended (%v): the budgets did not stop it", src, time.Since(start))
		}
	})
}
