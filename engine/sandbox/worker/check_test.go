package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
)

// TestPoolCheck: a check through the pool (a worker answering with goja's
// parser) says what the parser in process says, the same message and
// place, for valid bodies and syntax errors, in one warm worker.
func TestPoolCheck(t *testing.T) {
	p := testPool(t, 1)
	codes := []string{
		"return input", "", "let x = 1;\nreturn x +", "return )", "a\nb\n  c d", "})(",
		"const s = '((((' + \"[[\" + `{{${ 1 }}`; // ((((\n/* [[[[ */ return s",
		"return " + strings.Repeat("[", sandbox.MaxNesting) + strings.Repeat("]", sandbox.MaxNesting),
		"return " + strings.Repeat("[", sandbox.MaxNesting+1),
		"return `${`${`${" + strings.Repeat("(", sandbox.MaxNesting),
		"return 'é' +", "/* unterminated", "return /(/", "return 1 +\n\n",
	}
	for _, code := range codes {
		got, err := checkError(p, code)
		if err != nil {
			t.Error(err)
			continue
		}
		if want := syntax.Check(code); !sameError(got, want) {
			t.Errorf("Check(%q) = %+v, in process %+v", code, got, want)
		}
	}
	if n := p.Started(); n != 1 {
		t.Errorf("%d workers started for %d checks, want 1", n, len(codes))
	}
}

// TestPoolCheckHostile: 64 KiB (maxCodeBytes) of nesting, or of
// recursion the parser follows that no bracket counts, ends in the
// in-process verdict or in a refusal (the worker's stack limit, the
// check's timeout), within CheckTimeout and with the runner's own
// memory flat: the recursion is the worker's.
func TestPoolCheckHostile(t *testing.T) {
	p := testPool(t, 1)
	for _, code := range []string{
		strings.Repeat("(", 64<<10),
		strings.Repeat("{", 64<<10),
		strings.Repeat("!", 64<<10) + "x",
		strings.Repeat("a=", 32<<10) + "1",
		strings.Repeat("x?", 32<<10) + "1",
		strings.Repeat("-", 64<<10) + "1",
		"return " + strings.Repeat("`${", 16<<10),
		strings.Repeat("(a)=>", 12<<10) + "1",
		strings.Repeat("a.", 32<<10) + "b",
		// Nesting the bracket count misses (a regular expression's
		// brackets), and a parse that is quadratic in the labels in
		// scope, reporting each duplicate at every level (8,000 took
		// 4 s in process): the worker is what bounds them.
		strings.Repeat("(/)/,", 12<<10) + "1",
		strings.Repeat("a=>x=/;/[0]=", 5<<10) + "1",
		strings.Repeat("a:", 32<<10) + ";",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		got, err := checkError(p, code)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Error(err)
			continue
		}
		// A refusal is not compared with the parser in process, which
		// may take minutes on what the worker was stopped at.
		refused := got != nil && got.Kind != sandbox.KindThrown // a bound of the worker
		if !refused {
			if want := syntax.Check(code); !sameError(got, want) {
				t.Errorf("Check(%.12q…) = %+v, in process %+v", code, got, want)
			}
		}
		t.Logf("%.12q…: %v, %v %+v", code, took, refused, got)
		if bound := sandbox.CheckTimeout + 2*time.Second; took > bound {
			t.Errorf("Check(%.12q…) took %v, over %v", code, took, bound)
		}
		if after.StackSys > before.StackSys+8<<20 {
			t.Errorf("Check(%.12q…): the runner's stack grew from %d to %d bytes", code, before.StackSys, after.StackSys)
		}
	}
}

// checkError is p.Check(context.Background(), code) as a *sandbox.Error (nil when valid).
func checkError(p *sandbox.Pool, code string) (*sandbox.Error, error) {
	err := p.Check(context.Background(), code)
	if err == nil {
		return nil, nil
	}
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return nil, fmt.Errorf("Check(%.20q) = %v, not a *sandbox.Error", code, err)
	}
	return se, nil
}

func sameError(a, b *sandbox.Error) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// A body found valid is not sent to a worker again; one with an error is.
func TestPoolCheckRemembers(t *testing.T) {
	p := testPool(t, 1)
	for _, code := range []string{"return 1", "return ("} {
		first := p.Check(context.Background(), code)
		p.Close() // the next check that needs a worker starts one
		before := p.Started()
		again := p.Check(context.Background(), code)
		if (first == nil) != (again == nil) {
			t.Errorf("Check(%q) = %v, then %v", code, first, again)
		}
		if started := p.Started() - before; (first == nil) != (started == 0) {
			t.Errorf("Check(%q) again (first %v) started %d workers", code, first, started)
		}
	}
}
