package lang

import (
	"context"
	"testing"
)

// The evaluations a workflow does most, on their success paths: what
// explaining a failure (explain.go) must leave as fast as it was.
func BenchmarkEval(b *testing.B) {
	items := make([]any, 100)
	for i := range items {
		items[i] = map[string]any{"total": float64(i), "name": "item"}
	}
	env := &testEnv{
		input: map[string]any{"count": 3.0, "name": "x", "items": items},
		nodes: map[string]testNode{"a": {status: "completed", output: map[string]any{"order": items, "total": 10.0}}},
	}
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return []string{"a"} }}
	for _, bm := range []struct{ name, src string }{
		{"Reference", `${{ nodes.a.output.total }}`},
		{"Arithmetic", `${{ nodes.a.output.total + 1 }}`},
		{"Concat", `${{ input.name + "-" + nodes.a.output.order[0].name }}`},
		{"Predicate", `${{ sum(map(nodes.a.output.order, .total)) }}`},
		{"Builtins", `${{ upper(trim(input.name)) + string(len(input.items)) }}`},
		{"Mixed", `total ${{ nodes.a.output.total }} for ${{ input.name }}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			var errs problemList
			tmpl := CompileTemplate("v", bm.src, sc, &errs)
			if len(errs) > 0 {
				b.Fatalf("compile: %q", errs)
			}
			var ev Evaluator
			b.ReportAllocs()
			for b.Loop() {
				ev.Init(context.Background(), env, tmpl, Budget{MaxSteps: 1e7, MaxMemory: 16 << 20}, nil)
				if _, err := ev.Eval(tmpl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A failure's cost: what explaining it (explain.go) adds to an evaluation
// that fails.
func BenchmarkEvalFailure(b *testing.B) {
	env := &testEnv{
		input: map[string]any{"count": 3.0, "name": "x"},
		nodes: map[string]testNode{"a": {status: "completed", output: map[string]any{"order": []any{1.0}, "total": 10.0}}},
	}
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return []string{"a"} }}
	for _, bm := range []struct{ name, src string }{
		{"NullPlusNumber", `${{ nodes.a.output.totl + 1 }}`},
		{"BuiltinOfNull", `${{ sum(map(nodes.a.output.ordr, .total)) }}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			var errs problemList
			tmpl := CompileTemplate("v", bm.src, sc, &errs)
			if len(errs) > 0 {
				b.Fatalf("compile: %q", errs)
			}
			var ev Evaluator
			b.ReportAllocs()
			for b.Loop() {
				ev.Init(context.Background(), env, tmpl, Budget{MaxSteps: 1e7, MaxMemory: 16 << 20}, nil)
				if _, err := ev.Eval(tmpl); err == nil {
					b.Fatal("no error")
				}
			}
		})
	}
}
