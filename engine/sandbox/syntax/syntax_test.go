package syntax

import (
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
	for _, s := range []string{"return input", "})(", "let x = 1;\nreturn x +", "`${`", "/* (", "'\\", strings.Repeat("(", 300)} {
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
