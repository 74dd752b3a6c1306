package engine

import (
	"encoding/json"
	"errors"
)

// document is a workflow document as decoded, after it passed the schema.
type document struct {
	ID      string          `json:"id"`
	Input   json.RawMessage `json:"input"`
	Nodes   []nodeDoc       `json:"nodes"`
	Output  json.RawMessage `json:"output"`
	present map[string]bool
}

// nodeDoc is one node as written.
type nodeDoc struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Needs     []string       `json:"needs"`
	When      string         `json:"when"`
	With      map[string]any `json:"with"`
	Retry     *RetryPolicy   `json:"retry"`
	TimeoutMs int64          `json:"timeoutMs"`
	OnError   string         `json:"onError"`
}

// RetryPolicy says how a failing node is tried again.
type RetryPolicy struct {
	MaxAttempts  int     `json:"maxAttempts"`
	BackoffMs    int64   `json:"backoffMs"`
	Factor       float64 `json:"factor"`
	MaxBackoffMs int64   `json:"maxBackoffMs"`
}

// DefaultRetry is the policy a node's retry object starts from: the fields
// it leaves out keep these values.
var DefaultRetry = RetryPolicy{MaxAttempts: 1, BackoffMs: 200, Factor: 2, MaxBackoffMs: 10_000}

// UnmarshalJSON fills the fields a document leaves out from DefaultRetry, so
// that an explicit "backoffMs": 0 (retry at once) is told from an absent one.
func (p *RetryPolicy) UnmarshalJSON(b []byte) error {
	type plain RetryPolicy
	v := plain(DefaultRetry)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = RetryPolicy(v)
	return nil
}

// parseDocument checks raw against the workflow schema and decodes it. path
// is where the document sits in the request ("workflow",
// "runtime.workflows[2]"). A document the schema finds fault with is still
// decoded as far as it goes, so that the graph, expressions and input can
// be checked too; nil means there is nothing to check.
func parseDocument(path string, raw json.RawMessage, d *detailList) *document {
	sch, err := documentSchema()
	if err != nil {
		d.add(path, "%v", err)
		return nil
	}
	inst, err := schemaValueRaw(raw)
	if err != nil {
		d.add(path, "malformed JSON: %v", err)
		return nil
	}
	if err := sch.Validate(inst); err != nil {
		schemaDetails(path, err, d)
	}
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			d.add(path, "%v", err)
			return nil
		}
		// A member of the wrong type is left out and reported by the
		// schema; the rest is decoded.
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	doc.present = map[string]bool{}
	for k := range fields {
		doc.present[k] = true
	}
	return &doc
}

// parseNodes decodes a sub-graph's nodes (a map node's with.nodes), already
// checked by the document schema.
func parseNodes(v any) ([]nodeDoc, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var nodes []nodeDoc
	err = json.Unmarshal(b, &nodes)
	return nodes, err
}
