package engine

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
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
	pl := e.plans.get(e.plans.key([]byte(doc), l, false), []byte(doc))
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
	if len(doc) < 2*planHeadLen {
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
	if got := e.plans.lookup(rest, l, false); got != pl {
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
		{"shorter than the head", []byte(doc[:planHeadLen-1]), l, false},
		{"other first bytes", append([]byte(`{ `), doc[1:]...), l, false},
	} {
		if got := e.plans.lookup(tt.rest, tt.limits, tt.code); got != nil {
			t.Errorf("%s: lookup found a plan", tt.name)
		}
	}
	// Out of the hash map, still in the head index: a request is served
	// from the plan only if the decoder found it by its head.
	e.plans.mu.Lock()
	delete(e.plans.m, pl.key)
	e.plans.mu.Unlock()
	x, err := e.PrepareBody([]byte(reqBody(doc, `{"n":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer x.discard()
	if x.g != pl.g {
		t.Fatal("the request was compiled anew, not served from the plan its head found")
	}
}

// TestPlanCacheHeadWays: documents sharing their first planHeadLen bytes
// are found by them up to planHeadWays at a time, the latest kept first;
// an older one is then found only through get. A plan evicted or dropped
// leaves the index.
func TestPlanCacheHeadWays(t *testing.T) {
	e := New(DefaultLimits())
	l := e.Limits.WithDefaults()
	var docs []string
	var plans []*plan
	for salt := range planHeadWays + 2 {
		doc := strings.Replace(planShapes[0].doc(20, 1), `"output":"${{ nodes.n19.output }}"`,
			fmt.Sprintf(`"output":"${{ nodes.n19.output + %d }}"`, salt), 1)
		docs = append(docs, doc)
		plans = append(plans, keep(t, e, doc, reqBody(doc, "")))
	}
	if !bytes.Equal([]byte(docs[0][:planHeadLen]), []byte(docs[len(docs)-1][:planHeadLen])) {
		t.Fatal("the documents do not share their head")
	}
	for i, doc := range docs {
		found := e.plans.lookup([]byte(doc+`}`), l, false)
		latest := i >= len(docs)-planHeadWays
		if latest && found != plans[i] {
			t.Errorf("document %d of %d: lookup found %p, want %p", i, len(docs), found, plans[i])
		}
		if !latest && found != nil {
			t.Errorf("document %d of %d: lookup found a plan past the index's %d ways", i, len(docs), planHeadWays)
		}
		if e.plans.get(e.plans.key([]byte(doc), l, false), []byte(doc)) != plans[i] {
			t.Errorf("document %d: get does not find its plan", i)
		}
	}
	e.plans.mu.Lock()
	e.plans.remove(plans[len(plans)-1])
	e.plans.mu.Unlock()
	if e.plans.lookup([]byte(docs[len(docs)-1]), l, false) != nil {
		t.Error("an evicted plan is still found by its head")
	}
	if e.plans.lookup([]byte(docs[len(docs)-2]), l, false) != plans[len(plans)-2] {
		t.Error("evicting one plan lost another of its head")
	}
	e.plans.reset()
	if len(e.plans.heads) != 0 || e.plans.lookup([]byte(docs[len(docs)-2]), l, false) != nil {
		t.Error("reset left plans in the head index")
	}
}
