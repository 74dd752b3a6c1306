package lang

import (
	"encoding/json"
	"fmt"
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
