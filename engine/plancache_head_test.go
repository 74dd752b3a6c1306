package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/plancache"
)

// keep prepares body twice on e (a plan is kept on the second sighting)
// and returns the plan kept for doc.
func keep(t *testing.T, e *Engine, doc, body string) *plan {
	t.Helper()
	for range 2 {
		if got := prepareOutcome(t, e, []byte(body), false); got.err != "" {
			t.Fatal(got.err)
		}
	}
	l := e.Limits.WithDefaults()
	pl := e.plans.Get([]byte(doc), planEnv{l, false}.key())
	if pl == nil {
		t.Fatal("no plan kept")
	}
	return pl
}

// TestPlanCacheHeadAgrees: a body whose workflow member begins with a kept
// document's text is found by the text's first bytes and not read to its
// end (protocol.Decoder.Known); whatever follows the text, what the body
// gets is what an engine without a cache gives it.
func TestPlanCacheHeadAgrees(t *testing.T) {
	doc := planShapes[0].doc(20, 3)
	if len(doc) < 2*plancache.HeadLen {
		t.Fatalf("the document has %d bytes, too few to test the head", len(doc))
	}
	other := strings.Replace(doc, `"output":"${{ nodes.n19.output }}"`, `"output":"${{ nodes.n18.output }}"`, 1)
	cold := New(DefaultLimits())
	cold.plans = nil
	for _, tt := range []struct{ name, body string }{
		{"input after", `{"version":1,"workflow":` + doc + `,"input":{"n":2}}`},
		{"input before", `{"version":1,"input":{"n":2},"workflow":` + doc + `}`},
		{"spaces around", `{"version":1,"workflow": ` + doc + ` ,"trace":true}`},
		{"a second workflow", `{"version":1,"workflow":` + doc + `,"workflow":` + doc + `}`},
		{"a second, other workflow", `{"version":1,"workflow":` + doc + `,"workflow":` + other + `}`},
		{"text after the body", `{"version":1,"workflow":` + doc + `}x`},
		{"a bracket after the text", `{"version":1,"workflow":` + doc + `]}`},
		{"no end", `{"version":1,"workflow":` + doc},
		{"cut short", `{"version":1,"workflow":` + doc[:len(doc)-1]},
		{"same head, other end", `{"version":1,"workflow":` + other + `}`},
		{"duplicate input key", `{"version":1,"workflow":` + doc + `,"input":{"n":1,"n":2}}`},
		{"input too deep", `{"version":1,"workflow":` + doc + `,"input":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`},
		{"bad input", `{"version":1,"workflow":` + doc + `,"input":{"n":01}}`},
		{"unknown member", `{"version":1,"workflow":` + doc + `,"inptu":{}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := New(DefaultLimits())
			keep(t, e, doc, reqBody(doc, ""))
			want := prepareOutcome(t, cold, []byte(tt.body), true)
			for i := range 2 {
				if got := prepareOutcome(t, e, []byte(tt.body), true); !reflect.DeepEqual(got, want) {
					t.Fatalf("preparation %d:\n cached %v\n cold   %v", i+1, got, want)
				}
			}
		})
	}
}

// TestPlanCacheHeadServes: the plan found by the head is the one used, with
// the map that get reads out of the way; and it is found only for the same
// limits and sandbox, and only for text the body holds whole.
func TestPlanCacheHeadServes(t *testing.T) {
	doc := planShapes[0].doc(20, 3)
	e := New(DefaultLimits())
	pl := keep(t, e, doc, reqBody(doc, ""))
	l := e.Limits.WithDefaults()
	rest := []byte(doc + `,"input":{}}`)
	if got := e.plans.Lookup(rest, planEnv{l, false}.key()); got != pl {
		t.Fatalf("lookup found %p, want the kept plan %p", got, pl)
	}
	other := l
	other.MaxNodes++
	for _, tt := range []struct {
		name   string
		rest   []byte
		limits Limits
		code   bool
	}{
		{"other limits", rest, other, false},
		{"with a sandbox", rest, l, true},
		{"cut short", []byte(doc[:len(doc)-1]), l, false},
		{"shorter than the head", []byte(doc[:plancache.HeadLen-1]), l, false},
		{"other first bytes", append([]byte(`{ `), doc[1:]...), l, false},
	} {
		if got := e.plans.Lookup(tt.rest, planEnv{tt.limits, tt.code}.key()); got != nil {
			t.Errorf("%s: lookup found a plan", tt.name)
		}
	}
	// The request is served from the plan (that one found by its head
	// alone is, plancache's TestHeadServesWithoutTheMap).
	x, err := e.PrepareBody([]byte(reqBody(doc, `{"n":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer x.discard()
	if x.g != pl.Value.(*compiled).g {
		t.Fatal("the request was compiled anew, not served from the kept plan")
	}
}
