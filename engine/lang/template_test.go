package lang

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// problemList collects what a compile reports, path and message.
type problemList []string

func (p *problemList) Invalid(path, msg string)      { *p = append(*p, path+": "+msg) }
func (p *problemList) NeedsRuntime(path, msg string) { *p = append(*p, path+": "+msg) }
func (p *problemList) Warn(path, msg string)         { *p = append(*p, path+": "+msg) }

// TestTemplateProblemPaths: a problem is reported at the path of the value
// it is in, however deep (the path's stack holds eight steps in place and
// the rest beside) and after the values before it were walked.
func TestTemplateProblemPaths(t *testing.T) {
	deep := `"${{ nope }}"`
	for i := range 12 {
		if i%2 == 0 {
			deep = `{"k` + fmt.Sprint(i) + `":` + deep + `}`
		} else {
			deep = `[0,` + deep + `]`
		}
	}
	want := "w.with" // outermost first
	for i := 11; i >= 0; i-- {
		if i%2 == 0 {
			want += ".k" + fmt.Sprint(i)
		} else {
			want += "[1]"
		}
	}
	tests := []struct{ doc, path string }{
		{`{"a":1,"b":{"c":[1,2,{"d":"${{ nope }}"}]}}`, "w.with.b.c[2].d"},
		{`{"a":{"x":"y"},"b":["${{ nope }}"]}`, "w.with.b[0]"},
		{`"${{ nope }}"`, "w.with"},
		{deep, want},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.doc), &v); err != nil {
			t.Fatal(err)
		}
		var errs problemList
		CompileTemplateAt("w", ".with", v, &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return nil }}, &errs)
		if len(errs) != 1 || !strings.HasPrefix(errs[0], tt.path+": ") || !strings.Contains(errs[0], `unknown name "nope"`) {
			t.Errorf("%s: problems %q, want one at %s", tt.doc, errs, tt.path)
		}
	}
}

// TestTemplateMember: a template of one member gives the member's template,
// which evaluates to what the whole does under that key; any other shape
// gives none.
func TestTemplateMember(t *testing.T) {
	tests := []struct {
		doc string
		ok  bool
	}{
		{`{"value":"${{ input.n + 1 }}"}`, true},
		{`{"value":"n is ${{ input.n }}"}`, true},
		{`{"value":{"k":["${{ input.n }}", 2]}}`, true},
		{`{"value":0}`, true},
		{`{"value":{"k":"v"}}`, true},
		{`{"value":"$${{ not an expression }}"}`, true},
		{`{"value":null}`, true},
		{`{"other":"${{ input.n }}"}`, false},
		{`{"other":1}`, false},
		{`{"value":1,"other":2}`, false},
		{`{"value":"${{ input.n }}","other":"${{ input.n }}"}`, false},
		{`"${{ {'value': input.n} }}"`, false},
		{`{}`, false},
		{`[1]`, false},
	}
	sc := &Scope{Visible: func(string) bool { return true }, Ancestors: func() []string { return nil }}
	env := &testEnv{input: map[string]any{"n": 41.0}}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.doc), &v); err != nil {
			t.Fatal(err)
		}
		var errs problemList
		whole := CompileTemplateAt("w", ".with", v, sc, &errs)
		if len(errs) > 0 {
			t.Fatalf("%s: %q", tt.doc, errs)
		}
		m, ok := whole.Member("value")
		if ok != tt.ok {
			t.Errorf("%s: Member ok = %t, want %t", tt.doc, ok, tt.ok)
			continue
		}
		if !ok {
			if !m.IsZero() {
				t.Errorf("%s: a template with no member", tt.doc)
			}
			continue
		}
		b := Budget{MaxSteps: 1e6, MaxMemory: 1 << 20}
		got, err := NewEvaluator(context.Background(), env, m, b, nil).Eval(m)
		if err != nil {
			t.Fatalf("%s: %v", tt.doc, err)
		}
		all, err := NewEvaluator(context.Background(), env, whole, b, nil).Eval(whole)
		if err != nil {
			t.Fatalf("%s: %v", tt.doc, err)
		}
		if want := all.(map[string]any)["value"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: member evaluates to %#v, the whole's value is %#v", tt.doc, got, want)
		}
	}
}
