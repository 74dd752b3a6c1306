package engine

import (
	"encoding/json"

	"github.com/runnerd/lambda-runner/engine/document"
)

// Prepare, stage 5: input. The request's input is decoded and validated
// against the workflow's input schema, compiled with the document.

// checkInput decodes the execution input and checks it against the
// workflow's input schema.
func (p *prep) checkInput(g *graph, raw json.RawMessage) any {
	var input any
	if len(raw) > 0 {
		v, err := decodeJSON(raw)
		if err != nil {
			p.d.Addf("input", "malformed JSON: %v", err)
			return nil
		}
		input = v
	}
	if g.inputSchema != nil {
		document.SchemaDetails("input", g.inputSchema, input, p.d, &p.hints)
	}
	return input
}
