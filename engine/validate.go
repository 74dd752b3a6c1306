package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/protocol"
)

// Problem is one thing wrong (or a warning) with a request body or workflow
// document.
type Problem struct {
	Path         string // e.g. "workflow.nodes[2].with.url"; for bare documents paths start at the workflow
	Message      string
	Line, Column int  // 1-based position in the source when known, else 0
	Offset       int  // byte offset, -1 when unknown
	Warning      bool // a warning does not refuse the request
}

// Validate checks src — a whole request body, or a bare workflow document
// (no top-level "workflow"/"version" keys) — without running anything or
// contacting any host, and returns every problem found, errors and
// warnings. Prepare uses the same checks.
func (e *Engine) Validate(src []byte) []Problem {
	body, bare := src, isBareDocument(src)
	if bare {
		body = make([]byte, 0, len(bareWrap)+len(src)+1)
		body = append(body, bareWrap...)
		body = append(body, src...)
		body = append(body, '}')
	}
	x, d, syn := e.check(body, bare, false)
	x.discard()
	if syn != nil {
		off := syn.Offset
		if bare {
			off = min(max(off-len(bareWrap), 0), len(src))
		}
		line, col := protocol.LineColumn(src, off)
		return []Problem{{Message: "malformed JSON: " + syn.Reason, Line: line, Column: col, Offset: off}}
	}
	problems := make([]Problem, 0, len(d.Errors())+len(d.Warnings()))
	for _, det := range d.Errors() {
		problems = append(problems, Problem{Path: det.Path, Message: det.Message, Offset: -1})
	}
	for _, det := range d.Warnings() {
		problems = append(problems, Problem{Path: det.Path, Message: det.Message, Offset: -1, Warning: true})
	}
	if b := d.Busy(); b != nil {
		// Not a problem of the document: what could not be checked now.
		problems = append(problems, Problem{Path: b.Path, Message: b.Message, Offset: -1, Warning: true})
	}
	if bare {
		for i := range problems {
			problems[i].Path = barePath(problems[i].Path)
		}
	}
	paths := make([]string, len(problems))
	for i, p := range problems {
		paths[i] = p.Path
	}
	at := protocol.Locate(src, paths)
	for i := range problems {
		if off, ok := at[problems[i].Path]; ok {
			problems[i].Offset = off
			problems[i].Line, problems[i].Column = protocol.LineColumn(src, off)
		}
	}
	return problems
}

// bareWrap opens the request body Validate wraps a bare document in.
const bareWrap = `{"version":1,"workflow":`

// PrepareBody checks a request body as Validate does — structure (duplicate
// keys, nesting), envelope, workflow, input — and prepares its execution.
// The error is a *protocol.Invalid listing every error with its path.
func (e *Engine) PrepareBody(body []byte) (*Execution, error) {
	x, d, _ := e.check(body, false, true)
	if err := d.Err(); err != nil {
		x.discard()
		return nil, err
	}
	if x.fanout {
		x.body = body
	}
	return x, nil
}

// check runs every check on a request body. bare says the body wraps a
// workflow document given alone: there is no input to check then. syn is
// set when the body is not JSON, and nothing else was checked.
func (e *Engine) check(body []byte, bare, run bool) (x *Execution, d *document.Problems, syn *protocol.Syntax) {
	d = &document.Problems{Bare: bare}
	l := e.Limits.WithDefaults()
	mode := prepareValidate
	switch {
	case bare:
		mode = prepareBare
	case run:
		mode = prepareRun
	}
	dec := protocol.Decoder{MaxDepth: l.MaxDepth, Workflow: document.Decoder(l.MaxDepth, l.MaxNodes)}
	if mode == prepareRun && e.plans != nil {
		// A document whose plan is cached is not decoded (prepare finds
		// the plan as the request's WorkflowValue), nor, when the cache
		// finds it by its first bytes, even read to its end.
		decode, env := dec.Workflow, planEnv{l, e.Services.Code != nil}.key()
		dec.Known = func(rest []byte) (protocol.KnownWorkflow, int) {
			if pl := e.plans.Lookup(rest, env); pl != nil {
				return pl, pl.Len()
			}
			return nil, 0
		}
		dec.Workflow = func(raw []byte) (any, error) {
			if pl := e.plans.Get(raw, env); pl != nil {
				return pl, nil
			}
			return decode(raw)
		}
	}
	req, err := dec.DecodeAll(body)
	var inv *protocol.Invalid
	if errors.As(err, &inv) && inv.Syntax != nil {
		syn = inv.Syntax
	}
	d.AddErr("", err)
	if req == nil {
		return nil, d, syn
	}
	return e.prepare(req, d, mode), d, nil
}

// isBareDocument reports whether src is a JSON object without the members
// that make a request body.
func isBareDocument(src []byte) bool {
	if t := bytes.TrimSpace(src); len(t) == 0 || t[0] != '{' {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(src, &top) != nil {
		return false
	}
	// A workflow document may say "version" too; only a request body has
	// "workflow", and only a document has "nodes".
	_, w := top["workflow"]
	_, v := top["version"]
	_, n := top["nodes"]
	return !w && (!v || n)
}

// barePath turns a path in the wrapping body into one in the document.
func barePath(p string) string {
	switch {
	case p == "workflow":
		return ""
	case strings.HasPrefix(p, "workflow."):
		return p[len("workflow."):]
	}
	return p
}
