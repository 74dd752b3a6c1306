package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// parseInvalid parses and checks the workflow document wf, which must be
// refused, and returns its problems.
func parseInvalid(t *testing.T, wf string) *protocol.Invalid {
	t.Helper()
	d := &Problems{}
	Parse("workflow", json.RawMessage(wf), 0, nil, d)
	var inv *protocol.Invalid
	if !errors.As(d.Err(), &inv) || len(inv.Details) == 0 {
		t.Fatalf("the document was not refused: %v", d.Err())
	}
	return inv
}

// suggested counts the details that say "did you mean".
func suggested(inv *protocol.Invalid) int {
	n := 0
	for _, d := range inv.Details {
		if strings.Contains(d.Message, "did you mean") {
			n++
		}
	}
	return n
}

// TestHostileNearMisses: the search for near misses, which a document
// with many unknown members could make long, looks at a bounded number of
// members an object and of objects a document, and the refusal is the
// same otherwise.
func TestHostileNearMisses(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"nodes":[{"id":"a","type":"set"`)
	for c := 'a'; c <= 'v'; c++ {
		fmt.Fprintf(&b, `,"%cith":1`, c) // each one letter from "with"
	}
	for i := range 20000 {
		fmt.Fprintf(&b, `,"zz%d":1`, i)
	}
	b.WriteString(`}]}`)
	inv := parseInvalid(t, b.String())
	if len(inv.Details) != 1 || strings.Count(inv.Details[0].Message, " for ") != maxNearMissMembers {
		t.Errorf("one object with 22 near misses of 20,022 members: %d details, %d suggested; want 1, %d",
			len(inv.Details), strings.Count(inv.Details[0].Message, " for "), maxNearMissMembers)
	}

	b.Reset()
	b.WriteString(`{"nodes":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"n%d","type":"set","wiht":1}`, i)
	}
	b.WriteString(`]}`)
	inv = parseInvalid(t, b.String())
	hinted := suggested(inv)
	// A 400 lists the first protocol.MaxDetails problems and counts the rest.
	if len(inv.Details)+inv.More() != 2000 || hinted != maxNearMissPlaces {
		t.Errorf("2,000 objects with a near miss: %d details and %d more, %d with a suggestion; want 2000, %d", len(inv.Details), inv.More(), hinted, maxNearMissPlaces)
	}
}
