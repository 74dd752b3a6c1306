package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// onePassCorpus: bodies the one-pass read takes, and bodies it must hand
// back to the ordinary read (a workflow that is not an object, a second
// workflow, an error after the workflow, trailing text, a duplicate key).
var onePassCorpus = []string{
	minimal,
	`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1.50}}]},"input":{"n":12345678901234567890},"trace":true}`,
	` {"workflow" : { "id" : "w" , "nodes" : [ ] } , "version" : 1 } `,
	`{"version":1,"workflow":{},"runtime":{"workflows":[{"id":"c"}]},"permissions":["tool:*"]}`,
	`{"version":1,"workflow":{"nodes":[]},"workflow":{"nodes":[1]}}`,
	`{"version":1,"workflow":[{}]}`,
	`{"version":1,"workflow":"{}"}`,
	`{"version":1,"workflow":null}`,
	`{"version":1,"workflow":{"nodes":[]},"input":{`,
	`{"version":1,"workflow":{"nodes":[]}} x`,
	`{"version":1,"workflow":{"nodes":[]}}{}`,
	`{"version":1,"workflow":{"nodes":[],"nodes":[]}}`,
	`{"version":1,"version":2,"workflow":{}}`,
	`{"version":1,"workflow":{"a":{"b":{"c":{"d":[[[[1]]]]}}}}}`,
	`{"version":1,"workflow":{"x":"\u00e9\ud83d\ude00"}}`,
	`[1]`, `null`, ``, `{`, `{"version":1,"workflow":{]}`,
	// The one pass cuts members out by brackets and quotes and has each
	// checked by its reader: text that is not JSON anywhere goes back.
	`{"version":1,"workflow":{"a":01}}`,
	`{"version":1,"workflow":{"nodes":[]},"input":{"a":1.}}`,
	`{"version":01,"workflow":{}}`,
	`{"version":1,"workflow":{},}`,
	`{"version":1,,"workflow":{}}`,
	`{"version":1 "workflow":{}}`,
	`{"version":1,"workflow":{}`,
	`{"version":1,"workflow":{"a":"}]\"{["},"input":"[{\""}`,
	`{"vers\u0069on":1,"workflow":{}}`,
	`{"version":1,"w\u006frkflow":{"nodes":[]}}`,
	`{"version":1,"workflow":{},"é":[]}`,
	`{"version":1,"workflow":{"a":[1,2]]}}`,
	`{"version":1,"workflow":{"a":"` + "\x01" + `"}}`,
	`{"version":1,"input":tru,"workflow":{}}`,
	`{"version":1,"trace":true ,"workflow":{"nodes":[]} , "input" : [ ] }`,
	`{"version":1,"workflow":{"nodes":[]},"input":"\ud800"}`,
	"{\"version\":1,\"workflow\":{\"x\":\"\xff\"},\"input\":\"\xfe\"}",
}

// members reads a document's members, keeping them as raw text.
func members(raw []byte) (any, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// TestDecodeOnePassAgrees: with Workflow set, DecodeAll gives what it gives
// without, and the workflow's value when the one pass read the body.
func TestDecodeOnePassAgrees(t *testing.T) {
	onePass := 0
	for _, body := range onePassCorpus {
		if checkOnePass(t, []byte(body), 4) {
			onePass++
		}
	}
	if onePass < 6 {
		t.Errorf("only %d bodies were read in one pass", onePass)
	}
}

// TestDecodeOnePassHookError: a Workflow that fails hands the body back.
func TestDecodeOnePassHookError(t *testing.T) {
	dc := Decoder{Workflow: func([]byte) (any, error) { return nil, errors.New("no") }}
	req, err := dc.DecodeAll([]byte(minimal))
	if err != nil || req == nil || req.WorkflowValue != nil || len(req.Workflow) == 0 {
		t.Fatalf("req %+v, err %v", req, err)
	}
}

func FuzzDecodeOnePass(f *testing.F) {
	for _, body := range onePassCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkOnePass(t, body, 0) })
}

// checkOnePass compares DecodeAll with and without Workflow on body,
// reporting whether the one pass read it.
func checkOnePass(t *testing.T, body []byte, maxDepth int) bool {
	t.Helper()
	plain, perr := Decoder{MaxDepth: maxDepth}.DecodeAll(body)
	var got any
	hooked, herr := Decoder{MaxDepth: maxDepth, Workflow: func(raw []byte) (any, error) {
		v, err := members(raw)
		got = v
		return v, err
	}}.DecodeAll(body)
	if fmt.Sprint(perr) != fmt.Sprint(herr) {
		t.Fatalf("%.200q: errors differ\n plain  %v\n hooked %v", body, perr, herr)
	}
	if (plain == nil) != (hooked == nil) {
		t.Fatalf("%.200q: request plain %v, hooked %v", body, plain != nil, hooked != nil)
	}
	if hooked == nil {
		return false
	}
	wv := hooked.WorkflowValue
	hooked.WorkflowValue = nil
	if !reflect.DeepEqual(plain, hooked) {
		t.Fatalf("%.200q: requests differ\n plain  %+v\n hooked %+v", body, plain, hooked)
	}
	checkKnown(t, body, maxDepth, plain, perr)
	if wv == nil {
		return false
	}
	if reflect.ValueOf(wv).Pointer() != reflect.ValueOf(got).Pointer() {
		t.Fatalf("%.200q: WorkflowValue is not the hook's result", body)
	}
	want, err := members(plain.Workflow)
	if err != nil || !reflect.DeepEqual(want, wv) {
		t.Fatalf("%.200q: WorkflowValue %v, want %v (%v)", body, wv, want, err)
	}
	return true
}

// known is a Workflow result that says its document was checked before.
type known struct{}

func (known) KnownWorkflow() {}

// checkKnown: a body whose workflow has nothing wrong with its structure
// (the only kind a caller has seen before) decodes with a hook that says
// it is known, and so is not walked again, as it does without the hook.
func checkKnown(t *testing.T, body []byte, maxDepth int, plain *ExecutionRequest, perr error) {
	t.Helper()
	var inv *Invalid
	if errors.As(perr, &inv) {
		for _, d := range inv.Details {
			if d.Path == "workflow" || strings.HasPrefix(d.Path, "workflow.") || strings.HasPrefix(d.Path, "workflow[") {
				return
			}
		}
	}
	sameDecoding(t, body, "known", plain, perr, Decoder{MaxDepth: maxDepth, Workflow: func(raw []byte) (any, error) {
		if !json.Valid(raw) {
			return nil, errors.New("not JSON")
		}
		return known{}, nil
	}})
	if plain == nil || len(plain.Workflow) == 0 || plain.Workflow[0] != '{' || !json.Valid(plain.Workflow) {
		return
	}
	// Known, knowing the workflow's text, finds it at the start of the
	// member's value and the member is not read: the same request.
	// (A body the one pass hands back is read the ordinary way, with
	// neither hook.)
	text := string(plain.Workflow)
	sameDecoding(t, body, "Known", plain, perr, Decoder{MaxDepth: maxDepth,
		Workflow: func([]byte) (any, error) { return nil, errors.New("read though known") },
		Known: func(rest []byte) (KnownWorkflow, int) {
			if strings.HasPrefix(string(rest), text) {
				return known{}, len(text)
			}
			return nil, 0
		}})
}

// sameDecoding: dc decodes body into plain, with error perr, its
// WorkflowValue aside; name says which hooks dc has.
func sameDecoding(t *testing.T, body []byte, name string, plain *ExecutionRequest, perr error, dc Decoder) {
	t.Helper()
	req, err := dc.DecodeAll(body)
	if fmt.Sprint(perr) != fmt.Sprint(err) {
		t.Fatalf("%.200q: errors differ\n plain %v\n %s %v", body, perr, name, err)
	}
	if req != nil {
		req.WorkflowValue = nil
	}
	if !reflect.DeepEqual(plain, req) {
		t.Fatalf("%.200q: requests differ\n plain %+v\n %s %+v", body, plain, name, req)
	}
}

// TestDecodeKnownText: Known is asked at the workflow member's value and
// only there; what it finds is taken as the member, the rest of the body
// read as ever; a length past the body's end, or none, has the member read.
func TestDecodeKnownText(t *testing.T) {
	doc := `{"nodes":[{"id":"a","type":"set","with":{"value":"}]\"{["}}]}`
	body := []byte(`{"version":1,"workflow":` + doc + `,"input":{"n":1}}`)
	for _, tt := range []struct {
		name  string
		n     func(rest []byte) int
		known bool
	}{
		{"found", func([]byte) int { return len(doc) }, true},
		{"not found", func([]byte) int { return 0 }, false},
		{"past the end", func(rest []byte) int { return len(rest) + 1 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var at []string
			read := 0
			req, err := Decoder{
				Workflow: func(raw []byte) (any, error) { read++; return members(raw) },
				Known: func(rest []byte) (KnownWorkflow, int) {
					at = append(at, string(rest[:min(len(rest), 9)]))
					if n := tt.n(rest); n > 0 {
						return known{}, n
					}
					return nil, 0
				}}.DecodeAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if len(at) != 1 || at[0] != doc[:9] {
				t.Errorf("Known asked at %q, want once at the workflow", at)
			}
			if _, ok := req.WorkflowValue.(known); ok != tt.known || (read == 0) != tt.known {
				t.Errorf("WorkflowValue %T, Workflow called %d times", req.WorkflowValue, read)
			}
			if string(req.Workflow) != doc || string(req.Input) != `{"n":1}` {
				t.Errorf("workflow %s, input %s", req.Workflow, req.Input)
			}
		})
	}
}

// TestDecodeKnownWorkflow: what a known workflow skips is its own walk,
// never the rest of the body's.
func TestDecodeKnownWorkflow(t *testing.T) {
	hook := func([]byte) (any, error) { return known{}, nil }
	for _, tt := range []struct{ body, want string }{
		{`{"version":1,"workflow":{"nodes":[]},"input":{"a":1,"a":2}}`, `duplicate key "a"`},
		{`{"version":1,"workflow":{"nodes":[]},"input":[[[[[1]]]]]}`, "nested deeper than maxDepth (4 levels)"},
		{`{"version":1,"workflow":{"nodes":[]},"version":1}`, `duplicate key "version"`},
	} {
		_, err := Decoder{MaxDepth: 4, Workflow: hook}.DecodeAll([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.body, err, tt.want)
		}
	}
}
