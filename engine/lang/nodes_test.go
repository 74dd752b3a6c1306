package lang

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// manyUpstream is an Upstream of n visible nodes n0…, counting what is
// asked of it.
type manyUpstream struct {
	n                  int
	visible, ancestors int
}

func (u *manyUpstream) Visible(id string) bool {
	u.visible++
	var k int
	_, err := fmt.Sscanf(id, "n%d", &k)
	return err == nil && k < u.n
}

func (u *manyUpstream) Ancestors() []string {
	u.ancestors++
	ids := make([]string, u.n)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i)
	}
	return ids
}

// countingEnv is a testEnv counting its State calls.
type countingEnv struct {
	testEnv
	states int
}

func (e *countingEnv) State(id string) (map[string]any, bool) {
	e.states++
	return e.testEnv.State(id)
}

// nodes[id] with a computed id looks that node up alone; nodes read whole
// is built, and charged, per node it holds, before it is built.
func TestNodesIndexedCost(t *testing.T) {
	const many = 10_000
	tests := []struct {
		src       string
		steps     int64
		want      any
		limit     bool // LIMIT_EXCEEDED
		states    int  // State calls
		ancestors int  // Ancestors calls
	}{
		{src: `nodes[input.id].output`, steps: 1e6, want: 7.0, states: 1},
		{src: `nodes[input.id + ""].status`, steps: 1e6, want: "completed", states: 1},
		{src: `nodes[input.missing] == nil`, steps: 1e6, want: true},
		{src: `map([input.id, input.id], nodes[#].output)`, steps: 1e6, want: []any{7.0, 7.0}, states: 2},
		{src: `nodes.n7.output + nodes[input.id].output`, steps: 1e6, want: 14.0, states: 2},
		{src: `len(nodes)`, steps: 1e6, want: 2, states: many, ancestors: 1},
		// 10,000 nodes cost 20,001 steps: over a budget of 20,000 before
		// a single state is read.
		{src: `len(nodes)`, steps: 2 * many, limit: true, ancestors: 1},
		{src: `nodes[input.id].output + len(nodes)`, steps: 2 * many, limit: true, ancestors: 1},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			up := &manyUpstream{n: many}
			sc := &Scope{Upstream: up}
			var errs problemList
			tmpl := CompileTemplate("v", "${{ "+tt.src+" }}", sc, &errs)
			if len(errs) > 0 {
				t.Fatalf("compile: %q", errs)
			}
			env := &countingEnv{testEnv: testEnv{
				input: map[string]any{"id": "n7"},
				nodes: map[string]testNode{"n7": {status: "completed", output: 7.0}, "n9999": {status: "completed", output: 1.0}},
			}}
			// The evaluation sees its own ended nodes among many visible.
			env.nodes["n10001"] = testNode{status: "completed", output: 2.0}
			up.visible, up.ancestors = 0, 0
			got, err := NewEvaluator(context.Background(), env, tmpl, Budget{MaxSteps: tt.steps, MaxMemory: 64 << 20}, up).Eval(tmpl)
			var le *Error
			switch {
			case tt.limit:
				if !errors.As(err, &le) || le.Code != "LIMIT_EXCEEDED" {
					t.Fatalf("got %v, %v; want LIMIT_EXCEEDED", got, err)
				}
			case err != nil:
				t.Fatalf("eval: %v", err)
			case fmt.Sprint(got) != fmt.Sprint(tt.want):
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			if env.states != tt.states || up.ancestors != tt.ancestors {
				t.Errorf("%d State and %d Ancestors calls, want %d and %d", env.states, up.ancestors, tt.states, tt.ancestors)
			}
		})
	}
}

// Without an Upstream, nothing but the nodes the template names is seen.
func TestNodesIndexedWithoutUpstream(t *testing.T) {
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return []string{"a"} }}
	var errs problemList
	tmpl := CompileTemplate("v", `${{ [nodes[input.id], len(nodes)] }}`, sc, &errs)
	if len(errs) > 0 {
		t.Fatalf("compile: %q", errs)
	}
	env := &testEnv{input: map[string]any{"id": "a"}, nodes: map[string]testNode{"a": {status: "completed", output: 1.0}}}
	got, err := NewEvaluator(context.Background(), env, tmpl, Budget{MaxSteps: 1e6}, nil).Eval(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.([]any), []any{nil, 0}) {
		t.Errorf("got %#v, want [nil, 0]", got)
	}
}
