package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// encodeAuthor refuses before it allocates: a value over its bound, or
// over what the execution's budget has left, in-band and naming it.
func TestEncodeAuthorBounds(t *testing.T) {
	r := &run{x: &Execution{limits: Limits{MemoryBudget: 1 << 20}.WithDefaults()}}
	r.x.limits.MemoryBudget = 1 << 20
	big := strings.Repeat("\x01", 200<<10) // 1.2 MB as JSON
	for _, tt := range []struct {
		name  string
		v     any
		limit int64
		code  protocol.Code
	}{
		{"within", strings.Repeat("<", 100<<10), 1 << 20, ""},
		{"over its bound, counted escaped", big, 1 << 20, protocol.CodeLimitExceeded},
		{"over the budget", strings.Repeat("<", 900<<10), 4 << 20, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := r.encodeAuthor(context.Background(), "with.input", tt.v, tt.limit)
			if tt.code != "" {
				var ne *NodeError
				if !errors.As(err, &ne) || ne.Code != tt.code || !strings.Contains(ne.Message, "with.input") {
					t.Fatalf("err = %v, want %s naming with.input", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(a.B)) != r.budget.Load() || len(a.B) != cap(a.B) {
				t.Errorf("%d bytes (capacity %d), %d charged", len(a.B), cap(a.B), r.budget.Load())
			}
			// A second one does not fit beside it.
			second, err := r.encodeAuthor(context.Background(), "with.input", tt.v, tt.limit)
			if tt.name == "over the budget" {
				var ne *NodeError
				if !errors.As(err, &ne) || ne.Code != protocol.CodeMemoryBudgetExceeded {
					t.Errorf("a second value over the budget: %v", err)
				}
			}
			if err == nil {
				second.release()
			}
			a.release()
			if r.budget.Load() != 0 {
				t.Errorf("%d bytes still charged after release", r.budget.Load())
			}
		})
	}
}
