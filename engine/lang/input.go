package lang

import (
	"encoding/json"
	"fmt"
	"slices"
)

// InputShape is what a workflow's input schema says about input.<name>:
// the properties it declares, and whether others are refused.
type InputShape struct {
	names  []string
	closed bool // additionalProperties: false
}

// NewInputShape reads the top-level properties of an input schema. It is
// nil when the schema says nothing about properties, and then no reference
// is checked.
func NewInputShape(raw json.RawMessage) *InputShape {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	closed := string(s.AdditionalProperties) == "false"
	if s.Properties == nil && !closed {
		return nil
	}
	shape := &InputShape{closed: closed}
	for name := range s.Properties {
		shape.names = append(shape.names, name)
	}
	slices.Sort(shape.names)
	return shape
}

// check reports each input.<name> that e reads and the schema does not
// declare: an error when the schema is closed (the reference can only ever
// be null), a warning otherwise.
func (s *InputShape) check(path string, e *Expression, p Problems, h *Hints) {
	if s == nil || e == nil {
		return
	}
	for _, name := range e.inputRefs {
		if _, ok := slices.BinarySearch(s.names, name); ok {
			continue
		}
		hint := h.DidYouMean(name, func() []string { return s.names })
		if s.closed {
			p.Invalid(path, fmt.Sprintf("expression %q: input.%s is not a property of the workflow's input schema, which allows no others (additionalProperties: false)%s", e.src, name, hint))
			continue
		}
		p.Warn(path, fmt.Sprintf("expression %q: input.%s is not declared by the workflow's input schema%s", e.src, name, hint))
	}
}
