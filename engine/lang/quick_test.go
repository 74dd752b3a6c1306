package lang

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// quickCorpus holds texts of the quick shapes and texts next to them that
// are not: both kinds must agree with expr.
var quickCorpus = []string{
	// A form keeps a one-field rest in its own buffer and a longer one in
	// a slice of its own, never the parser's (describeFast checks it).
	"nodes.a.output.k", "nodes.a.output.x.y.z.w + 1", "nodes.a.status.x", "2 * nodes.a.output.x.y",
	"execution.id.x.y", "input.a.b.c.d.e.f.g < input.h",
	"nodes.a.output", "nodes.a.output + 1", "1 + nodes.a.output", "input.x", "input.x.y.z.w",
	"input.a.b.c.d.e.f.g.h.i", "nodes.a.output + 1.5", "nodes.a.output * 2 /* c */",
	"input.a + input.b", "input.a - input.b", "input.a < 3", "input.a <= 3", "input.a >= input.b",
	"3 > nodes.b.output.n", "execution.id", "nodes.a.error.code", "nodes.a.error", "nodes.error.code",
	"nodes.a.error.code.x", "nodes", "input", "1", "1.5", "true", `"s"`, "nil", "nodes.a.status == 'x'",
	"input.a / 0", "input.a / 2.5", "input.a + 0x10", "input.a + 1_000", "input.a + 1e3", "input.a + 01",
	"input.a + 0", "input.a + 0.0", "input.a + 00", "input.a+-1", "input.a -1", "input.a - -1", "item.x",
	"index + 1", "item", "nodes.a.output.len", "input.true", "input.in", "input.not", "input.nil",
	"nodes.a .output", "nodes. a", "input.a + 99999999999999999999", "input.a + 999999999999999999",
	"input.a + 9223372036854775807", "// c\n input.a", "input.a // c", "input.a /* c", "/* */ input.a /* */",
	"input.a/*c*/+/*d*/1", "input.a**2", "input.a * *2", "input.a *= 2", "input.a <* 2", "input.a < = 2",
	"input.a < input.b < 3", "input.a + 1 + 2", "input.a + (1)", "(input.a)", "input.a.0", "input.a[0]",
	"input.a?.b", "input.a ?? 1", "input.é", "input.aé", "input.a$", "$env", "$env.x", "secrets.k",
	"foo.bar", "len(input.a)", "input.a % 2", "input.a == 1", "input.a != nil", "input.a && true",
	"input.a and input.b", "input.a in [1]", "input.a..b", "1.", "1.5.x", ".5 + input.a", "input.a + .5",
	"input.a + 1.5e3", "input._x_1", "input.X9", "input.9x", "nodes.n-1.output", "nodes.my-node.output",
	" \t\r\n input.a \n", "", " ", "input.a\u00a0", "input.a +", "+ input.a", "input..a", "input.a.",
	"nodes.a.output - nodes.b.output", "nodes.a.output * nodes.a.output", "input.a / input.b",
	"execution.id + 1", "index < 10", "item.v * 1.25", "input.a +1", "input.a+1", "input.a-1",
	"input.a /*/ 1", "input.a /**/ 1", "input.a / /* c */ 1",
}

// TestCompileQuickAgrees checks the quick reading against compileBudgeted
// over the corpus: where it reads a text, the result must be the same.
func TestCompileQuickAgrees(t *testing.T) {
	quick := 0
	for _, src := range quickCorpus {
		if checkQuickAgrees(t, src) {
			quick++
		}
	}
	// The corpus must exercise the quick path, or the test says nothing.
	if quick < 40 {
		t.Fatalf("only %d corpus texts read quickly", quick)
	}
}

func FuzzCompileQuick(f *testing.F) {
	for _, src := range quickCorpus {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) { checkQuickAgrees(t, src) })
}

// checkQuickAgrees reports whether compileQuick reads src, failing t when
// what it gives differs from compileBudgeted's.
func checkQuickAgrees(t *testing.T, src string) bool {
	t.Helper()
	q := compileQuick(src)
	if q == nil {
		return false
	}
	full, err := compileBudgeted(src, true)
	if err != nil {
		t.Errorf("%.100q: quick reading accepts what expr rejects: %v", src, err)
		return true
	}
	if full.prog != nil || full.budgeted || full.fast == nil {
		t.Errorf("%.100q: quick reading has a fast form, expr a program (budgeted %v)", src, full.budgeted)
		return true
	}
	if got, want := describeFast(q.fast), describeFast(full.fast); got != want {
		t.Errorf("%.100q: fast form\n quick %s\n expr  %s", src, got, want)
	}
	for _, d := range []string{describeFast(q.fast), describeFast(full.fast)} {
		if strings.Contains(d, "outside its form") {
			t.Errorf("%.100q: a form's rest is not its own: %s", src, d)
		}
	}
	if q.typ != full.typ {
		t.Errorf("%.100q: type quick %v, expr %v", src, q.typ, full.typ)
	}
	if got, want := describeRefs(q.refs), describeRefs(full.refs); got != want {
		t.Errorf("%.100q: names\n quick %s\n expr  %s", src, got, want)
	}
	return true
}

func describeFast(f *fastForm) string {
	if len(f.rest) > 0 && len(f.rest) <= len(f.restBuf) && &f.rest[0] != &f.restBuf[0] {
		return "rest outside its form"
	}
	rest := ""
	if len(f.rest) > 0 {
		rest = "." + strings.Join(f.rest, ".")
	}
	switch f.kind {
	case formLit:
		return fmt.Sprintf("lit(%T %v)", f.lit, f.lit)
	case formOp:
		return fmt.Sprintf("(%s %s %s)", describeFast(f.l), fastOps[f.op].name, describeFast(f.r))
	case formNodes:
		field := "output"
		if f.field == fieldStatus {
			field = "status"
		}
		return "nodes." + f.id + "." + field + rest
	case formInput:
		return "input" + rest
	case formExecution:
		return "execution" + rest
	}
	return "vm"
}

func describeRefs(c *refCollector) string {
	return fmt.Sprintf("roots %q lets %q nodeRefs %q nodesUses %d secretRefs %q secretUses %d inputRefs %q fields %v",
		c.roots, c.lets, c.nodeRefs, c.nodesUses, c.secretRefs, c.secretUses, c.inputRefs, slices.Clone(c.nodeFields))
}

// TestQuickMemo checks that a quick text is compiled once while its slot
// holds it, and that every slot answers only for its own text.
func TestQuickMemo(t *testing.T) {
	a1, err := compileProgram("nodes.memo_a.output + 1")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := compileProgram("nodes.memo_a.output + 1")
	if a1 != a2 {
		t.Error("the same quick text was compiled twice in a row")
	}
	// More texts than slots: each answer is for the text asked.
	for i := range 3 * len(quickMemo) {
		src := fmt.Sprintf("input.memo%d", i)
		c, err := compileProgram(src)
		if err != nil || c.src != src || c.fast == nil || c.fast.rest[0] != fmt.Sprintf("memo%d", i) {
			t.Fatalf("%s: got %+v, %v", src, c, err)
		}
	}
}

// An evaluation of a quick text reads its Expression and its forms and
// nothing else of the compilation: they are one piece of their own, the
// forms right after the Expression, so that the pieces of a workflow's
// expressions, compiled one after another, lie together (quickCompiled).
func TestQuickHotPiece(t *testing.T) {
	for _, tt := range []struct {
		src  string
		size uintptr // the hot piece's size
	}{
		{"nodes.a.output", unsafe.Sizeof(quickHot{})},
		{"nodes.a.output + 1", unsafe.Sizeof(quickHotOp{})},
		{"input.a < input.b", unsafe.Sizeof(quickHotOp{})},
	} {
		c := compileQuick(tt.src)
		if c == nil {
			t.Fatalf("%q: not quick", tt.src)
		}
		c.fillExpr()
		e, f := uintptr(unsafe.Pointer(c.expr)), uintptr(unsafe.Pointer(c.fast))
		if f != e+unsafe.Offsetof(quickHot{}.f) {
			t.Errorf("%q: the fast form is %d bytes from the Expression, want %d (right after it)", tt.src, int64(f-e), unsafe.Offsetof(quickHot{}.f))
		}
		if c.expr.fast != c.fast {
			t.Errorf("%q: the Expression's fast form is not the compilation's", tt.src)
		}
		for name, p := range map[string]uintptr{"compilation": uintptr(unsafe.Pointer(c)), "names": uintptr(unsafe.Pointer(c.refs))} {
			if p >= e && p < e+tt.size {
				t.Errorf("%q: the %s lies in the hot piece", tt.src, name)
			}
		}
	}
	// What an operator's evaluation reads fits in 480 bytes (one size
	// class), down from the 1,280 of compilation, names and forms together.
	if n := unsafe.Sizeof(quickHotOp{}); n > 480 {
		t.Errorf("quickHotOp is %d bytes, want at most 480", n)
	}
}

// opOf finds each operator of fastOps at its own index.
func TestFastOpNames(t *testing.T) {
	for i, o := range fastOps {
		if op, ok := opOf(o.name); !ok || int(op) != i || o.apply == nil {
			t.Errorf("%q: opOf gives %d, %v; it has a function: %v", o.name, op, ok, o.apply != nil)
		}
	}
	if _, ok := opOf("=="); ok {
		t.Error(`opOf("==") is an operator fast forms apply`)
	}
}
