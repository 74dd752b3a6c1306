package lang

import (
	"reflect"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// The fast forms must give what the VM gives, value or error, for every
// expression they take: each case runs both ways against the same scope.
func TestFastFormsAgreeWithTheVM(t *testing.T) {
	env := &testEnv{
		nodes: map[string]testNode{
			"a": {status: string(protocol.NodeStatusCompleted), output: map[string]any{"k": "v", "n": 2.0, "list": []any{1.0}, "deep": map[string]any{"x": nil}}},
			"b": {status: string(protocol.NodeStatusFailed), err: map[string]any{"code": string(protocol.CodeFailed), "message": "boom"}},
			"c": {}, // not ended
		},
		input: map[string]any{
			"name": "ada", "obj": map[string]any{"k": 1.0}, "arr": []any{"x"}, "typed": map[string]string{"k": "t"}, "nul": nil,
		},
		exec: map[string]any{"id": "exec-1"},
	}

	for _, tt := range []struct {
		src  string
		fast bool // has a fast form
	}{
		{"input", true},
		{"input.name", true},
		{"input.obj.k", true},
		{"input.obj.missing", true},
		{"input.missing", true},
		{"input.missing.k", true},
		{"input.nul.k", true},
		{"input.arr", true},
		{"input.arr.x", true},
		{`input["name"]`, true},
		{"input.typed", true},
		{"input.typed.k", true},
		{"input.name.x", true},
		{"nodes.a.output", true},
		{"nodes.a.output.k", true},
		{"nodes.a.output.deep.x", true},
		{"nodes.a.output.k.z", true},
		{"nodes.a.status", true},
		{"nodes.a.error", true},
		{"nodes.a.error.code", true},
		{"nodes.b.error.code", true},
		{"nodes.b.status", true},
		{"nodes.b.output", true},
		{"nodes.c.output", true},
		{"nodes.a", true},
		{"nodes", true},
		{"execution.id", true},
		{"item", true},
		{"1", true},
		{"1.5", true},
		{`"s"`, true},
		{"true", true},
		{"nil", true},
		{"-1", false},
		{"input?.name", false},
		{"input.arr[0]", false},
		{"nodes.a.output.n + 1", true},
		{"nodes.a.output.n - 1.5", true},
		{"2 * nodes.a.output.n", true},
		{"nodes.a.output.n / 0", true},
		{"nodes.a.output.n / nodes.a.output.n", true},
		{"nodes.a.output.n + 1 + 2", true},
		{"nodes.a.output.n < 3", true},
		{"nodes.a.output.n >= 2", true},
		{"input.obj.k > 0.5", true},
		{"input.obj.k <= nodes.a.output.n", true},
		{"nodes.a.output.k + 1", true},
		{`nodes.a.output.k + "x"`, false},
		{`input.name + input.name`, false},
		{"nodes.a.output.k < 1", true},
		{"nodes.a.output.missing + 1", true},
		{"nodes.c.output + 1", true},
		{"nodes.a.output.list + 1", true},
		{"input.typed.k + 1", true},
		{"1 + 2", false},
		{"nodes.a.output.n % 2", false},
		{"nodes.a.output.n == 2", false},
	} {
		t.Run(tt.src, func(t *testing.T) {
			var got [2]any
			var errs [2]string
			for i, fast := range []bool{false, true} {
				cp, err := compileBudgeted(tt.src, fast)
				if err != nil {
					t.Fatal(err)
				}
				if fast && (cp.fast != nil) != tt.fast {
					t.Fatalf("fast form %+v, want one: %t", cp.fast, tt.fast)
				}
				ev := &Evaluator{env: env, refs: []string{"a", "b", "c"}}
				got[i], err = ev.run(&Expression{src: tt.src, cp: cp, typ: cp.typ})
				if err != nil {
					errs[i] = err.Error()
				}
			}
			if !reflect.DeepEqual(got[0], got[1]) || errs[0] != errs[1] {
				t.Errorf("VM gave %#v (error %q), fast form %#v (error %q)", got[0], errs[0], got[1], errs[1])
			}
		})
	}
}
