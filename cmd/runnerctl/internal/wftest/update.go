package wftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// golden is an expectation written out, its members in the order the
// documentation gives them.
type golden struct {
	Status    string                `json:"status"`
	Output    any                   `json:"output,omitempty"`
	Error     *ExpectError          `json:"error,omitempty"`
	Nodes     map[string]goldenNode `json:"nodes,omitempty"`
	Decisions []map[string]string   `json:"decisions,omitempty"`
	Calls     *Calls                `json:"calls,omitempty"`
}

type goldenNode struct {
	Status   string       `json:"status"`
	Attempts int          `json:"attempts,omitempty"`
	Error    *ExpectError `json:"error,omitempty"`
}

// expectOf is the expectation of what g got: status, output or error,
// every top-level node's status (its error code when it failed, its
// attempts when more than one), the decisions and the calls.
func expectOf(l *loaded, g *got) *golden {
	e := &golden{Status: g.Status, Error: g.Error, Decisions: g.Decisions, Calls: &g.Calls}
	if g.Error == nil {
		e.Output = g.Output
	}
	for _, wn := range workflowNodes(l) {
		n := g.Nodes[wn.ID]
		if n == nil {
			continue
		}
		if e.Nodes == nil {
			e.Nodes = map[string]goldenNode{}
		}
		en := goldenNode{Status: n.Status}
		if n.Attempts > 1 {
			en.Attempts = n.Attempts
		}
		if n.Status == "failed" && n.Code != "" {
			en.Error = &ExpectError{Code: n.Code}
		}
		e.Nodes[wn.ID] = en
	}
	return e
}

// update rewrites l's file with the expect of what g got, every other
// member left as it was written.
func update(l *loaded, g *got) error {
	exp, err := json.MarshalIndent(expectOf(l, g), "  ", "  ")
	if err != nil {
		return err
	}
	out, err := setMember(l.src, "expect", exp)
	if err != nil {
		return err
	}
	fi, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	return os.WriteFile(l.path, out, fi.Mode().Perm())
}

// setMember replaces the value of the top-level member key of the JSON
// object src with val, or adds it last.
func setMember(src []byte, key string, val []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if t == key {
			end := dec.InputOffset()
			// Past the colon and the blanks before the value.
			i := int(start)
			for i < int(end) && (src[i] == ':' || src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
				i++
			}
			out := append(append(append([]byte{}, src[:i]...), val...), src[end:]...)
			return out, nil
		}
	}
	end := bytes.LastIndexByte(src, '}')
	head := bytes.TrimRight(src[:end], " \t\r\n")
	out := append([]byte{}, head...)
	if len(head) > 0 && head[len(head)-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, "\n  \""+key+"\": "...)
	out = append(out, val...)
	out = append(out, '\n')
	out = append(out, src[end:]...)
	return out, nil
}
