package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// parseDocument checks raw against the rules of the workflow schema and
// decodes it. path is where the document sits in the request ("workflow",
// "runtime.workflows[2]"). A document that breaks a rule is still decoded
// as far as it goes, so that the graph, expressions and input can be
// checked too; nil means there is nothing to check.
func parseDocument(path string, raw json.RawMessage, d *detailList) *document {
	tree, input, output, err := decodeDocument(raw)
	if err != nil {
		d.add(path, "malformed JSON: %v", err)
		return nil
	}
	return checkDocument(path, tree, input, output, d)
}

// decodedDocument is a document decoded as the request body was read
// (protocol.Decoder.Workflow, decodeMembers).
type decodedDocument struct {
	tree          map[string]any
	input, output json.RawMessage
}

// decodeWorkflowMembers is the engine's protocol.Decoder.Workflow.
func decodeWorkflowMembers(dec *json.Decoder) (any, error) {
	tree, input, output, err := decodeMembers(dec)
	if err != nil {
		return nil, err
	}
	return &decodedDocument{tree: tree, input: input, output: output}, nil
}

// checkDocument is parseDocument for a decoded document.
func checkDocument(path string, tree any, input, output json.RawMessage, d *detailList) *document {
	reportLeaves(checkDocumentSchema(path, tree), d)
	doc := &document{present: map[string]bool{}, Input: input, Output: output}
	m, ok := tree.(map[string]any)
	if !ok {
		return doc
	}
	for k := range m {
		doc.present[k] = true
	}
	doc.ID, _ = m["id"].(string)
	if a, ok := m["nodes"].([]any); ok {
		for i, n := range a {
			nm, ok := n.(map[string]any)
			if !ok {
				continue
			}
			if w, ok := nm["with"].(map[string]any); ok {
				if bad := floatNumbers(w); bad != "" {
					d.add(fmt.Sprintf("%s.nodes[%d].with", path, i), "the number %s is out of range", bad)
				}
			}
		}
		doc.Nodes = nodeDocs(a)
	}
	return doc
}

// decodeDocument decodes a workflow document with exact numbers, keeping
// its input and output members as written: the input schema is compiled
// from its text, the output is decoded later. Their places in the tree
// hold what the rules look at (the input's value, nil for the output).
func decodeDocument(raw []byte) (tree any, input, output json.RawMessage, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		err = dec.Decode(&tree)
		if err == nil {
			err = decodeEnd(dec)
		}
		return tree, nil, nil, err
	}
	if _, err = dec.Token(); err != nil {
		return nil, nil, nil, err
	}
	m, input, output, err := decodeMembers(dec)
	if err != nil {
		return nil, nil, nil, err
	}
	return m, input, output, decodeEnd(dec)
}

// decodeMembers reads an object's members up to its closing brace, the
// opening one read: decodeDocument, for dec set to use numbers.
func decodeMembers(dec *json.Decoder) (m map[string]any, input, output json.RawMessage, err error) {
	m = map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, nil, err
		}
		key, _ := t.(string)
		var v any
		switch key {
		case "input":
			if err := dec.Decode(&input); err != nil {
				return nil, nil, nil, err
			}
			in := json.NewDecoder(bytes.NewReader(input))
			in.UseNumber()
			err = in.Decode(&v)
		case "output":
			err = dec.Decode(&output)
		default:
			err = dec.Decode(&v)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		m[key] = v
	}
	if _, err = dec.Token(); err != nil {
		return nil, nil, nil, err
	}
	return m, input, output, nil
}

func decodeEnd(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid character after top-level value")
	}
	return nil
}

// floatNumbers turns the exact numbers under v into float64s in place, the
// representation expressions and templates work on. It returns the text of
// a number no float64 holds, "" when there is none.
func floatNumbers(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			f, num, bad := floatElem(e)
			if bad != "" {
				return bad
			}
			if num {
				v[k] = f
			}
		}
	case []any:
		for i, e := range v {
			f, num, bad := floatElem(e)
			if bad != "" {
				return bad
			}
			if num {
				v[i] = f
			}
		}
	}
	return ""
}

// floatElem is floatNumbers for one element of a container. When the
// element is a number (num), the container is to hold f in its place.
func floatElem(e any) (f float64, num bool, bad string) {
	n, ok := e.(json.Number)
	if !ok {
		return 0, false, floatNumbers(e)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, false, string(n)
	}
	return f, true, ""
}

// nodeDocs decodes nodes as written. A member of the wrong type is left
// zero: the schema rules report it.
func nodeDocs(a []any) []nodeDoc {
	nodes := make([]nodeDoc, len(a))
	// Every node's needs are a segment of one array.
	total := 0
	for _, v := range a {
		if m, ok := v.(map[string]any); ok {
			needs, _ := m["needs"].([]any)
			total += len(needs)
		}
	}
	all := make([]string, total)
	for i, v := range a {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		n := &nodes[i]
		n.ID, _ = m["id"].(string)
		n.Type, _ = m["type"].(string)
		n.When, _ = m["when"].(string)
		n.OnError, _ = m["onError"].(string)
		n.With, _ = m["with"].(map[string]any)
		if needs, ok := m["needs"].([]any); ok {
			n.Needs, all = all[:len(needs):len(needs)], all[len(needs):]
			for j, id := range needs {
				n.Needs[j], _ = id.(string)
			}
		}
		if t, ok := m["timeoutMs"]; ok {
			n.TimeoutMs, _ = millis(t)
		}
		if r, ok := m["retry"].(map[string]any); ok {
			n.Retry = retryPolicy(r)
		}
	}
	return nodes
}

func retryPolicy(m map[string]any) *RetryPolicy {
	p := DefaultRetry
	if v, ok := millis(m["maxAttempts"]); ok {
		p.MaxAttempts = int(v)
	}
	if v, ok := millis(m["backoffMs"]); ok {
		p.BackoffMs = v
	}
	if v, ok := millis(m["maxBackoffMs"]); ok {
		p.MaxBackoffMs = v
	}
	if _, text, ok := jsonNumber(m["factor"]); ok {
		p.Factor = decFloat(text)
	}
	return &p
}

// parseNodes decodes a sub-graph's nodes (a map node's with.nodes), already
// checked with the document.
func parseNodes(v any) ([]nodeDoc, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("got %s, want an array of nodes", jsonTypeOf(v))
	}
	return nodeDocs(a), nil
}
