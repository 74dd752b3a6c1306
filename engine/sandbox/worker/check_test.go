package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
)

// TestPoolCheck: a check through the pool (a worker answering with goja's
// parser) says what the parser in process says, the same message and
// place, for valid bodies, syntax errors and the hostile bodies of
// syntax.TestCheckHostileNesting, each within the in-process bound, all
// in one warm worker.
func TestPoolCheck(t *testing.T) {
	p := testPool(t, 1)
	codes := []string{
		"return input", "", "let x = 1;\nreturn x +", "return )", "a\nb\n  c d", "})(",
		"const s = '((((' + \"[[\" + `{{${ 1 }}`; // ((((\n/* [[[[ */ return s",
		"return " + strings.Repeat("[", sandbox.MaxNesting) + strings.Repeat("]", sandbox.MaxNesting),
		"return " + strings.Repeat("[", sandbox.MaxNesting+1),
		"return `${`${`${" + strings.Repeat("(", sandbox.MaxNesting),
		"return 'é' +", "/* unterminated", "return /(/",
		// Hostile: 64 KiB (maxCodeBytes) of nesting or of recursion the
		// parser follows.
		strings.Repeat("(", 64<<10),
		strings.Repeat("{", 64<<10),
		strings.Repeat("!", 64<<10) + "x",
		strings.Repeat("a=", 32<<10) + "1",
		strings.Repeat("x?", 32<<10) + "1",
		"return " + strings.Repeat("`${", 16<<10),
		strings.Repeat("(a)=>", 12<<10) + "1",
	}
	for _, code := range codes {
		start := time.Now()
		err := p.Check(code)
		took := time.Since(start)
		want := syntax.Check(code)
		var got *sandbox.Error
		if err != nil && !errors.As(err, &got) {
			t.Errorf("Check(%.20q) = %v, not a *sandbox.Error", code, err)
			continue
		}
		switch {
		case want == nil && got != nil:
			t.Errorf("Check(%.20q) = %v, in process nil", code, got)
		case want != nil && (got == nil || *got != *want):
			t.Errorf("Check(%.20q) = %+v, in process %+v", code, got, *want)
		}
		if bound := time.Second + checkRaceBound(); took > bound {
			t.Errorf("Check(%.20q) took %v, over %v", code, took, bound)
		}
	}
	if n := p.Started(); n != 1 {
		t.Errorf("%d workers started for %d checks, want 1", n, len(codes))
	}
}

// checkRaceBound is what the race detector adds to a check: it makes the
// parser's recursion several times slower.
func checkRaceBound() time.Duration {
	if raceEnabled {
		return 2 * time.Second
	}
	return 0
}

// A body found valid is not sent to a worker again; one with an error is.
func TestPoolCheckRemembers(t *testing.T) {
	p := testPool(t, 1)
	for _, code := range []string{"return 1", "return ("} {
		first := p.Check(code)
		p.Close() // the next check that needs a worker starts one
		before := p.Started()
		again := p.Check(code)
		if (first == nil) != (again == nil) {
			t.Errorf("Check(%q) = %v, then %v", code, first, again)
		}
		if started := p.Started() - before; (first == nil) != (started == 0) {
			t.Errorf("Check(%q) again (first %v) started %d workers", code, first, started)
		}
	}
}
