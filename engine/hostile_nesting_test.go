package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// Round 21: an expression's own nesting. expr-lang's parser recurses once
// per level on the goroutine stack, before its node limit counts anything;
// a million parentheses in a 2 MB request overflowed the 1 GB stack, a
// fatal error that ended the process with every execution in it. Every
// shape that nests the parser is refused before it parses, in a 400
// naming the field, however deep and whatever it nests.
func TestHostileExpressionNesting(t *testing.T) {
	rep := strings.Repeat
	deep := lang.MaxNesting + 1
	// The crash took about 600,000 parentheses; every other shape is
	// refused at the same depth, so 100,000 of it keeps the body near 1 MB
	// (and the test quick under the race detector).
	const huge, many = 600_000, 100_000
	tests := []struct {
		name string
		expr string
	}{
		{"parentheses", rep("(", huge) + "1" + rep(")", huge)},
		{"parentheses just past the bound", rep("(", deep) + "1" + rep(")", deep)},
		{"arrays", rep("[", many) + "1" + rep("]", many)},
		{"maps", rep("{a: ", many) + "1" + rep("} ", many)},
		{"calls", rep("abs(", many) + "1" + rep(")", many)},
		{"indexes", "input" + rep("[input[", many/2) + "0" + rep("]]", many/2)},
		{"closures", rep("map([1], ", many/4) + "#" + rep(")", many/4)},
		{"not", rep("!", many) + "true"},
		{"the word not", rep("not ", many) + "true"},
		{"minus", rep("-", many) + "1"},
		{"minus in parentheses", rep("-(", many) + "1" + rep(")", many)},
		{"ternaries", rep("true ? 1 : ", many) + "2"},
		{"if else", rep("if true { 1 } else ", many) + "{ 2 }"},
		{"lets", rep("let a = 1; ", many) + "a"},
		{"powers", "2" + rep(" ** 2", many)},
		{"carets", "2" + rep(" ^ 2", many)},
		{"mixed", rep("!(-[{a: true ? ", many/8) + "1" + rep(" : 2 }]) ", many/8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, _ := json.Marshal("${{ " + tt.expr + " }}")
			body := fmt.Sprintf(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":%s}}]}}`, field)
			start := time.Now()
			x, err := New(DefaultLimits()).PrepareBody([]byte(body))
			took := time.Since(start)
			x.discard()
			if took > costSlack(time.Second) {
				t.Errorf("%d bytes refused in %v", len(body), took)
			}
			var inv *protocol.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want a 400", err)
			}
			if len(inv.Details) != 1 || inv.Details[0].Path != "workflow.nodes[0].with.value" ||
				!strings.Contains(inv.Details[0].Message, fmt.Sprintf("nested more than %d levels", lang.MaxNesting)) {
				t.Errorf("details %.500v", inv.Details)
			}
		})
	}
}

// What people write nests far less and stays accepted, the bound's own
// depth included.
func TestExpressionNestingAccepted(t *testing.T) {
	rep := strings.Repeat
	at := lang.MaxNesting
	tests := []struct{ name, expr string }{
		{"parentheses at the bound", rep("(", at) + "1" + rep(")", at)},
		{"a long flat sum", "1" + rep(" + 1", 4000)},
		{"many negated terms", rep("!false && ", 1000) + "true"},
		{"many ternaries side by side", "[" + strings.TrimSuffix(rep("true ? 1 : 2, ", 1000), ", ") + "]"},
		{"many calls side by side", strings.TrimSuffix(rep("abs(-1) + ", 1000), " + ")},
		{"member chains", "{a: {b: {c: 1} } }.a.b.c + {a: 1}?.a"},
		{"pointers and predicates", "map(filter([1, 2, 3], # > 1), # * 2)[0] + reduce([1], #acc + #, 0)"},
		{"strings holding brackets", `len("` + rep("(", 10_000) + `") + len('` + rep("[", 10_000) + `')`},
		{"sequences", "let a = 1; let b = a + 1; let c = b ** 2; c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, _ := json.Marshal("${{ " + tt.expr + " }}")
			body := fmt.Sprintf(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":%s}}]}}`, field)
			x, err := New(DefaultLimits()).PrepareBody([]byte(body))
			if err != nil {
				t.Fatalf("refused: %.500v", err)
			}
			s := &recSink{}
			if sum := x.Run(t.Context(), s); sum.Status != protocol.StatusCompleted {
				t.Errorf("run ended %s", sum.Status)
			}
		})
	}
}
