package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DecodeRequest parses and checks the envelope of an execution request. The
// returned error is an *Invalid naming every field at fault. Unknown fields
// are ignored, so that newer servers can talk to older runners; the workflow
// document itself is left raw for the engine to validate. Duplicate keys
// anywhere in the body are refused.
func DecodeRequest(data []byte) (*ExecutionRequest, error) {
	req, err := Decoder{}.DecodeAll(data)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// Decoder decodes request bodies under a nesting cap. Its zero value has no
// cap of its own (encoding/json's applies).
type Decoder struct {
	// MaxDepth caps the nesting of the whole body; 0 means no cap.
	MaxDepth int
	// Workflow, when set, decodes the workflow document while the body is
	// read, so that the engine reads the document's text as the envelope
	// is read rather than after the envelope's checks. It is called only
	// for a workflow that starts as an object, with its text (the
	// request's Workflow, so not to be changed), which nothing has checked
	// to be JSON yet: Workflow must refuse text that is not. Its result
	// becomes the request's WorkflowValue. Should Workflow or anything
	// later in the body fail, the body is read again the ordinary way,
	// WorkflowValue stays nil, and every problem is reported as without it.
	// The request then holds slices of the body (its Workflow, Input and
	// raw members), which must not be changed while it is in use. A
	// result that is a KnownWorkflow is not walked again.
	Workflow func(raw []byte) (any, error)
	// Known, when set with Workflow, is asked first for the workflow's
	// value, with the body from that value's first byte to its end: if
	// rest begins with the text of a document it has seen (one that is a
	// whole JSON object), it returns its KnownWorkflow and the text's
	// length n, and the member is taken to be rest[:n] without being read
	// at all. A whole object's text ends where its last bracket closes, so
	// the member would have been cut there anyway: what a known document
	// saves is reading it to find its end, about 1 ns a byte. Known
	// returns 0 for any other text, which is then read as usual.
	Known func(rest []byte) (wv KnownWorkflow, n int)
}

// KnownWorkflow is implemented by a Workflow result that stands for a
// document the caller has seen before in a body that passed the
// structure checks under the same MaxDepth (a cached compilation of the
// same text): its nesting and keys are not walked again. The workflow is
// always the body's top-level member, so its text is as deep, and its
// objects hold the same keys, in every body.
type KnownWorkflow interface {
	KnownWorkflow()
}

// DecodeAll is DecodeRequest that keeps going: it returns the request as
// far as it could be decoded together with every problem of the envelope,
// so that a validator can go on to check the workflow. The request is nil
// only when the body is not a JSON object (then the error is a *Syntax or
// an *Invalid) or is nested deeper than MaxDepth.
func (dc Decoder) DecodeAll(data []byte) (*ExecutionRequest, error) {
	if dc.Workflow != nil {
		if top, wv, span, ok := dc.readTop(data); ok {
			walked := data
			if _, known := wv.(KnownWorkflow); known {
				// The rest of the body is walked, the workflow as {}.
				walked = slices.Concat(data[:span[0]], []byte("{}"), data[span[1]:])
			}
			req, err := dc.check(walked, top, nil, walkValid)
			if req != nil {
				req.WorkflowValue = wv
			}
			return req, err
		}
	}
	// Decoded first: encoding/json checks the whole body is JSON before it
	// decodes, so the structure walk need not check it again.
	var top map[string]json.RawMessage
	uerr := json.Unmarshal(data, &top)
	walk := walkValid
	if jse := (*json.SyntaxError)(nil); errors.As(uerr, &jse) {
		walk = walkTokens
	}
	return dc.check(data, top, uerr, walk)
}

// check walks data's structure and checks the envelope's members, top as
// decoded with error uerr.
func (dc Decoder) check(data []byte, top map[string]json.RawMessage, uerr error, walk walker) (*ExecutionRequest, error) {
	if err := checkStructure(walk, data, dc.MaxDepth); err != nil {
		var se *Syntax
		if errors.As(err, &se) {
			return nil, &Invalid{Details: []Detail{{Message: "request body must be a JSON object (" + se.Error() + ")"}}, Syntax: se}
		}
		var inv *Invalid
		if !errors.As(err, &inv) || inv.tooDeep {
			return nil, err
		}
		req, err2 := decodeEnvelope(top, uerr)
		var more *Invalid
		if errors.As(err2, &more) {
			inv.Merge(more)
		}
		return req, inv
	}
	return decodeEnvelope(top, uerr)
}

// readTop reads the body's top-level members in one pass, the workflow
// through dc.Workflow, and the others as they are written; span is where
// the workflow's text is in data. ok is false when
// the body is not an object read to its end without an error, a duplicate
// workflow member included: the caller then reads it the ordinary way.
//
// The body is scanned once: the members are cut out of it by their
// brackets and quotes, and each is checked to be JSON by what reads it
// (json.Valid, or dc.Workflow, which must refuse what is not JSON), so
// that the workflow, most of a body, is not scanned by encoding/json's
// tokenizer and copied before dc.Workflow reads it. The members are
// slices of data; a key with an escape or a byte outside ASCII is left to
// the ordinary read, which unquotes it.
func (dc Decoder) readTop(data []byte) (top map[string]json.RawMessage, wv any, span [2]int, ok bool) {
	i := blank(data, 0)
	if i == len(data) || data[i] != '{' {
		return nil, nil, span, false
	}
	i = blank(data, i+1)
	top = map[string]json.RawMessage{}
	if i < len(data) && data[i] == '}' {
		return top, nil, span, blank(data, i+1) == len(data)
	}
	for {
		key, next, plain := plainKey(data, i)
		if !plain {
			return nil, nil, span, false
		}
		i = blank(data, next)
		if i == len(data) || data[i] != ':' {
			return nil, nil, span, false
		}
		i = blank(data, i+1)
		var known KnownWorkflow
		end := -1
		if string(key) == "workflow" && dc.Known != nil {
			if kw, n := dc.Known(data[i:]); kw != nil && n > 0 && n <= len(data)-i {
				known, end = kw, i+n
			}
		}
		if known == nil {
			end = valueEnd(data, i)
		}
		if end <= i {
			return nil, nil, span, false
		}
		raw := json.RawMessage(data[i:end:end])
		if string(key) == "workflow" {
			if _, dup := top["workflow"]; dup || raw[0] != '{' {
				return nil, nil, span, false
			}
			if known != nil {
				wv = known
			} else {
				var err error
				if wv, err = dc.Workflow(raw); err != nil {
					return nil, nil, span, false
				}
			}
			span = [2]int{i, end}
		} else if !json.Valid(raw) {
			return nil, nil, span, false
		}
		top[string(key)] = raw
		i = blank(data, end)
		if i == len(data) {
			return nil, nil, span, false
		}
		switch data[i] {
		case ',':
			i = blank(data, i+1)
		case '}':
			return top, wv, span, blank(data, i+1) == len(data)
		default:
			return nil, nil, span, false
		}
	}
}

// blank returns the index of the first byte from i on that is not JSON
// white space.
func blank(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainKey reads the object key at data[i], a string of printable ASCII
// without escapes (plain false otherwise), and returns its text and the
// index after it.
func plainKey(data []byte, i int) (key []byte, next int, plain bool) {
	if i == len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// valueEnd returns the index after the value starting at data[i], found
// by its brackets and quotes alone (-1 when they do not close), or, for
// a number or a literal, at the first byte that cannot be part of one
// (i itself when there is none: no value).
// It checks nothing else: the value is checked by what reads it.
func valueEnd(data []byte, i int) int {
	if i == len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return closeQuote(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			case '"':
				if j = closeQuote(data, j); j < 0 {
					return -1
				}
				j-- // at the closing quote
			}
		}
		return -1
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// closeQuote returns the index after the closing quote of the string at
// data[i], -1 when it has none.
func closeQuote(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// decodeEnvelope checks the members of the body's top-level object, top as
// json.Unmarshal decoded it with error err.
func decodeEnvelope(top map[string]json.RawMessage, err error) (*ExecutionRequest, error) {
	if err != nil || top == nil {
		return nil, Invalidf("", "request body must be a JSON object%s", jsonReason(err))
	}
	inv := &Invalid{}
	req := &ExecutionRequest{}

	switch raw, ok := top["version"]; {
	case !ok || isNull(raw):
		inv.Add("version", "required: the protocol version, 1")
	default:
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || raw[0] == '"' {
			inv.Add("version", "must be the number 1, got %s", kindOf(raw))
		} else if v != Version {
			inv.Add("version", "unsupported protocol version %s: this runner speaks version 1", raw)
		} else {
			req.Version = Version
		}
	}

	switch raw, ok := top["workflow"]; {
	case !ok || isNull(raw):
		inv.Add("workflow", "required: the workflow document, an object")
	case firstByte(raw) != '{':
		inv.Add("workflow", "must be an object, got %s", kindOf(raw))
	default:
		req.Workflow = raw
	}

	if raw, ok := top["input"]; ok && !isNull(raw) {
		req.Input = raw
	}
	value(inv, top, "trace", &req.Trace)
	value(inv, top, "consentAvailable", &req.ConsentAvailable)
	req.Permissions = list[string](inv, top, "permissions")
	req.ToolPolicies = list[ToolPolicy](inv, top, "toolPolicies")
	if auth, ok := object(inv, top, "authorization"); ok {
		req.Authorization.Grants = list[Grant](inv, auth, "authorization.grants")
	}
	if rt, ok := object(inv, top, "runtime"); ok {
		decodeRuntime(inv, rt, &req.Runtime)
	}
	return req, inv.Err()
}

func decodeRuntime(inv *Invalid, m map[string]json.RawMessage, rt *Runtime) {
	rt.Models = list[Model](inv, m, "runtime.models")
	rt.Toolsets = list[Toolset](inv, m, "runtime.toolsets")
	rt.Workflows = list[json.RawMessage](inv, m, "runtime.workflows")
	for i, w := range rt.Workflows {
		if firstByte(w) != '{' {
			inv.Add(fmt.Sprintf("runtime.workflows[%d]", i), "must be a workflow document, an object, got %s", kindOf(w))
		}
	}
	h, ok := object(inv, m, "runtime.http")
	if !ok {
		return
	}
	value(inv, h, "runtime.http.policy", &rt.HTTP.Policy)
	if secrets, ok := object(inv, h, "runtime.http.secrets"); ok {
		rt.HTTP.Secrets = make(map[string]Secret, len(secrets))
		for _, name := range slices.Sorted(maps.Keys(secrets)) {
			var s Secret
			if err := json.Unmarshal(secrets[name], &s); err != nil {
				inv.Add("runtime.http.secrets."+name, "%s", typeMessage(err))
				continue
			}
			rt.HTTP.Secrets[name] = s
		}
	}
}

// lastSegment returns the JSON name a path ends with.
func lastSegment(path string) string { return path[strings.LastIndexByte(path, '.')+1:] }

// value decodes the named field into v, recording a type error under the
// field's path. Absent and null fields leave v alone.
func value(inv *Invalid, m map[string]json.RawMessage, path string, v any) {
	raw, ok := m[lastSegment(path)]
	if !ok || isNull(raw) {
		return
	}
	if err := json.Unmarshal(raw, v); err != nil {
		inv.Add(path+typePath(err), "%s", typeMessage(err))
	}
}

// object returns the named field as an object's members; ok is false when
// the field is absent, null or not an object (then recorded).
func object(inv *Invalid, m map[string]json.RawMessage, path string) (map[string]json.RawMessage, bool) {
	raw, ok := m[lastSegment(path)]
	if !ok || isNull(raw) {
		return nil, false
	}
	var members map[string]json.RawMessage
	if firstByte(raw) != '{' || json.Unmarshal(raw, &members) != nil {
		inv.Add(path, "must be an object, got %s", kindOf(raw))
		return nil, false
	}
	return members, true
}

// list decodes the named array element by element so that a type error's
// path names the index at fault. An absent or null field is nil; an empty
// array is non-nil, which matters for permissions.
func list[T any](inv *Invalid, m map[string]json.RawMessage, path string) []T {
	raw, ok := m[lastSegment(path)]
	if !ok || isNull(raw) {
		return nil
	}
	var elems []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &elems) != nil {
		inv.Add(path, "must be an array, got %s", kindOf(raw))
		return nil
	}
	out := make([]T, len(elems))
	for i, e := range elems {
		if err := json.Unmarshal(e, &out[i]); err != nil {
			inv.Add(fmt.Sprintf("%s[%d]%s", path, i, typePath(err)), "%s", typeMessage(err))
		}
	}
	return out
}

// typePath turns an UnmarshalTypeError's field into a path suffix.
func typePath(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return "." + te.Field
	}
	return ""
}

func typeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("must be %s, got %s", goKind(te.Type.Kind().String()), te.Value)
	}
	// Custom UnmarshalJSON errors (Secret, Grant) carry their own words.
	return strings.TrimPrefix(err.Error(), "json: ")
}

func goKind(k string) string {
	switch {
	case k == "string":
		return "a string"
	case k == "bool":
		return "a boolean"
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "float"), strings.HasPrefix(k, "uint"):
		return "a number"
	case k == "slice":
		return "an array"
	case k == "struct", k == "map":
		return "an object"
	}
	return k
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func firstByte(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// kindOf names the JSON type of raw for messages, never its content (it may
// be a secret).
func kindOf(raw json.RawMessage) string {
	switch firstByte(raw) {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func jsonReason(err error) string {
	var se *json.SyntaxError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return fmt.Sprintf(" (malformed JSON at byte %d: %s)", se.Offset, se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return ", got " + te.Value
	}
	return " (" + err.Error() + ")"
}
