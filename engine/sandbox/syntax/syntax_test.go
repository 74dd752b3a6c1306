package syntax

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		code       string
		line, col  int
		msgContain string
	}{
		{"return input", 0, 0, ""},
		{"", 0, 0, ""},
		{"let x = 1;\nreturn x +", 2, 11, "end of input"},
		{"return )", 1, 8, "Unexpected token )"},
		{"a\nb\n  c d", 3, 5, "Unexpected identifier"},
		{"})(", 1, 4, ""}, // cannot close the wrapper early
		{"const s = '((((' + \"[[\" + `{{${ 1 }}`; // ((((\n/* [[[[ */ return s", 0, 0, ""},
		{"return " + strings.Repeat("[", sandbox.MaxNesting) + strings.Repeat("]", sandbox.MaxNesting), 0, 0, ""},
		{"return " + strings.Repeat("[", sandbox.MaxNesting+1), 1, 8 + sandbox.MaxNesting, "nest deeper than 256"},
		{"return `${`${`${" + strings.Repeat("(", sandbox.MaxNesting), 1, 16 + sandbox.MaxNesting - 2, "nest deeper"},
		// Arrow functions nest without brackets: counted with them.
		{"return " + strings.Repeat("a=>", sandbox.MaxNesting) + "1", 0, 0, ""},
		{"return " + strings.Repeat("a=>", sandbox.MaxNesting+1) + "1", 1, 8 + 3*sandbox.MaxNesting + 1, "arrow functions, labels and brackets nest deeper than 256"},
		{"return " + strings.Repeat("(a)=>", 200) + strings.Repeat("[", 57), 1, 7 + 5*200 + 57, "brackets nest deeper than 256"},
		{"return " + strings.Repeat("a=>\n", sandbox.MaxNesting+1) + "1", sandbox.MaxNesting + 1, 2, "arrow functions"},
		// ... and end where a concise body ends for sure, so that many
		// arrows one after the other are not nesting.
		{strings.Repeat("const f = x => x + 1\n", 400) + "return f(input)", 0, 0, ""},
		{strings.Repeat("var g = (a, b) => a * b;", 400) + "return g(1, 2)", 0, 0, ""},
		{"return [" + strings.Repeat("x => x, ", 400) + "].length", 0, 0, ""},
		{"return {" + strings.Repeat("f: x => ({a: x}).a,\n", 400) + "}", 0, 0, ""},
		{strings.Repeat("input.map(x => x * 2).filter(y => y > 1)\n", 300) + "return 1", 0, 0, ""},
		{strings.Repeat("if (input) input = (x => x)(input)\n", 300) + "return input", 0, 0, ""},
		// Round 21: labels nest the statement after them, and the
		// parser's time and memory grow with the square of a run.
		{labels(sandbox.MaxNesting) + "return 1", 0, 0, ""},
		{strings.Repeat("a:", sandbox.MaxNesting+1) + "return 1", 1, 2*sandbox.MaxNesting + 1, "labels"},
		{strings.Repeat("a: ", sandbox.MaxNesting+1) + "1", 1, 3*sandbox.MaxNesting + 1, "labels"},
		{strings.Repeat("l:\n", sandbox.MaxNesting+1) + "1", sandbox.MaxNesting + 1, 1, "labels"},
		// ... but an object's members, a conditional's branches and a
		// switch's cases are not nesting.
		{"return {" + strings.Repeat("a: 1, ", 1000) + "}", 0, 0, ""},
		{"return [" + strings.Repeat("input ? a : b, ", 1000) + "]", 0, 0, ""},
		{"switch (input) {" + strings.Repeat("case a: break; ", 1000) + "default: }", 0, 0, ""},
		// Not a keyword that ends a body: a property named like one.
		{"return " + strings.Repeat("a=>a.return+", sandbox.MaxNesting+1) + "1", 1, 8 + 12*sandbox.MaxNesting + 1, "arrow functions"},
	}
	for _, tt := range tests {
		err := Check(tt.code)
		if tt.line == 0 {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", tt.code, err)
			}
			continue
		}
		if err == nil || err.Line != tt.line || err.Column != tt.col || !strings.Contains(err.Message, tt.msgContain) {
			t.Errorf("Check(%q) = %+v, want line %d column %d with %q", tt.code, err, tt.line, tt.col, tt.msgContain)
		}
	}
}

// TestCheckHostileNesting: the parser recurses per level of nesting (in a
// worker, or in process for a Checker). A body of maxCodeBytes (64 KiB) of
// nothing but nesting ends quickly and costs a bounded stack.
func TestCheckHostileNesting(t *testing.T) {
	for _, code := range []string{
		strings.Repeat("(", 64<<10),
		strings.Repeat("[", 64<<10),
		strings.Repeat("{", 64<<10),
		strings.Repeat("!", 64<<10) + "x",
		strings.Repeat("a=", 32<<10) + "1",
		strings.Repeat("x?", 32<<10) + "1",
		"return " + strings.Repeat("`${", 16<<10),
		strings.Repeat("a=>", 20<<10) + "1",
		strings.Repeat("(a)=>", 12<<10) + "1",
		strings.Repeat("async a=>", 7<<10) + "1",
		strings.Repeat("a:", 32<<10) + "1",
		strings.Repeat("a: ", 21<<10) + "1",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_ = Check(code)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		t.Logf("%q…: %v, stack from the OS %d -> %d bytes", code[:8], took, before.StackSys, after.StackSys)
		// About 0.1-0.2 s here on a loaded machine; the race detector
		// makes the parser's recursion several times slower.
		if bound := checkBound(); took > bound {
			t.Errorf("%q…: %v, over %v", code[:8], took, bound)
		}
		if after.StackSys > 64<<20 {
			t.Errorf("%q…: the stack grew to %d bytes", code[:8], after.StackSys)
		}
	}
}

// FuzzCheck: any body is checked without a panic, and an error is located
// inside the body.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"return input", "})(", "let x = 1;\nreturn x +", "`${`", "/* (", "'\\", strings.Repeat("(", 300), "a:{/}/;", "x={}/(/1", "if(a)/[/}]/g", "a++/(/", "//\u2028(", "'\\\r\n}'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		err := Check(code)
		if err == nil {
			return
		}
		if lines := strings.Count(code, "\n") + 1; err.Line < 0 || err.Line > lines {
			t.Errorf("Check(%q) locates line %d of %d", code, err.Line, lines)
		}
	})
}

func checkBound() time.Duration {
	if raceEnabled {
		return 3 * time.Second
	}
	return time.Second
}

// labels is n distinct labels in a row.
func labels(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "l%d:", i)
	}
	return b.String()
}

// TestNestingHiddenByTokens: nesting the parser sees, hidden from a
// filter that miscounts what is inside a literal or comment (a "}" in a
// regular expression closing a level the parser never sees closed), is
// refused by the filter before any parse; and brackets inside literals
// of valid bodies do not count.
func TestNestingHiddenByTokens(t *testing.T) {
	deep := func(unit string) string { return strings.Repeat(unit, 1200) }
	parens := strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300)
	for _, tc := range []struct{ name, code string }{
		{"regex after a brace hides the label's block", deep("a:{/}/;")},
		{"regex after if's parenthesis", deep("a:{if(a)/}/;")},
		{"regex after return", deep("a:{return /}/;")},
		{"regex after return and a no-break space", deep("a:{return\u00a0/}/;")},
		{"regex after an operator and a no-break space", deep("a:{x=\u00a0/}/;")},
		{"regex after an operator and a BOM", deep("a:{x=\ufeff/}/;")},
		{"regex class holding the slash", deep("a:{/[/}]/;")},
		{"escaped slash in a regex", deep(`a:{/\/}/;`)},
		{"division of an object, read as a regex", "x={}/" + parens + "/1"},
		{"division after ++, read as a regex", "a++/" + parens + "/1"},
		{"division after a property named return", "x.return/" + parens + "/1"},
		{"division by a name of, read as a regex", "var of=1;x=of/" + parens + "/1"},
		{"line comment ended by U+2028", "//\u2028" + parens},
		{"line comment ended by CR", "//\r" + parens},
		{"string continued over CRLF", deep("a:{'\\\r\n}';")},
		{"template text", deep("a:{`}`;")},
		{"string", deep("a:{'}';")},
		{"block comment", deep("a:{/*}*/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			if err := sandbox.CheckNesting(tc.code); err == nil {
				t.Errorf("CheckNesting(%q…) = nil, want nesting refused", tc.code[:min(len(tc.code), 40)])
			}
			if took := time.Since(start); took > checkBound() {
				t.Errorf("CheckNesting took %v", took)
			}
		})
	}
	// Valid bodies whose literals hold brackets: not nesting.
	for _, code := range []string{
		strings.Repeat("if (/[(]/.test(input) && /\\)/.test(input)) { x = input.split(/[{[]/) }\n", 400) + "return 1",
		strings.Repeat("x = a / (b) / c; y = (a) / 2; z = a[1] / 3;\n", 400) + "return 1",
		strings.Repeat("for (const s of input) if (s) /a(b)?/g.exec(s);\n", 400) + "return 1",
		strings.Repeat("x = `(${ '((' + \"[[\" }(`; // ((\n", 400) + "return 1",
		"let input2 = 1;\n" + strings.Repeat("a = b / c; d = e++ / 2;\n", 400) + "return 1",
	} {
		if err := Check(code); err != nil {
			t.Errorf("Check(%q…) = %v, want nil", code[:40], err)
		}
	}
}
