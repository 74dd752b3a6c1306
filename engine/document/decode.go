package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Prepare, stage 1: decode. A workflow document's text becomes a document
// and its nodes once, in one pass over the text, without a generic tree
// for its structure. The members the later stages read (a node's id, type,
// needs, when and with; the document's id, nodes, input and output) are
// held typed when they have the type the schema gives them. Every other
// member, and one of another type than the schema's, is kept as decoded
// in rest, for the check (check.go) to report or read; a document
// or node that is not an object keeps its value. So the decoder decides
// nothing: it refuses only text that is not JSON.
//
// A node's with stays a generic object (map[string]any, numbers as
// json.Number until the check turns them into float64s): its values may
// hold templates at any depth (an http body, a model's messages), which
// engine/lang compiles from these values, and a map node's sub-graph
// (with.nodes) is read from it into nodes by nodeFromValue, the typed
// decode's rules applied to a decoded value.

// Document is a workflow document as decoded.
type Document struct {
	ID     string
	Nodes  []Node
	Input  json.RawMessage // as written: the input schema is compiled from its text
	Output json.RawMessage // as written: decoded when compiled
	has    docMembers
	rest   map[string]any // see the comment at the top of the file
	// isObject is false when the document is not an object; value is
	// then what it is.
	isObject bool
	value    any
}

// HasOutput reports whether the document has an output member of its
// own (read typed), which the compile turns into the workflow's output.
func (doc *Document) HasOutput() bool { return doc.has&hasOutput != 0 }

// docMembers records which typed members a document or node has.
type docMembers uint8

const (
	hasID docMembers = 1 << iota
	hasType
	hasWhen
	hasNeeds
	hasWith
	hasNodes  // document
	hasInput  // document
	hasOutput // document
)

// docTyped and nodeTyped are the members the decode holds typed, by name,
// each with the bit recording it. The rest are kept as decoded.
var (
	docTyped  = map[string]docMembers{"id": hasID, "nodes": hasNodes, "input": hasInput, "output": hasOutput}
	nodeTyped = map[string]docMembers{"id": hasID, "type": hasType, "when": hasWhen, "needs": hasNeeds, "with": hasWith}
)

// Node is one node as decoded. Retry, TimeoutMs and OnError are read
// from rest (derive), where they are held as decoded for the check.
type Node struct {
	ID, Type, When string
	Needs          []string
	With           map[string]any
	Retry          *Retry
	TimeoutMs      int64
	OnError        string
	has            docMembers
	rest           map[string]any
	isObject       bool
	value          any
}

// Retry says how a failing node is tried again.
type Retry struct {
	MaxAttempts  int     `json:"maxAttempts"`
	BackoffMs    int64   `json:"backoffMs"`
	Factor       float64 `json:"factor"`
	MaxBackoffMs int64   `json:"maxBackoffMs"`
}

// DefaultRetry is the policy a node's retry object starts from: the fields
// it leaves out keep these values.
var DefaultRetry = Retry{MaxAttempts: 1, BackoffMs: 200, Factor: 2, MaxBackoffMs: 10_000}

// setRest keeps member k as decoded; it replaces a typed one of the same
// name (the last of duplicate keys counts, as for encoding/json).
func (n *Node) setRest(k string, v any) {
	switch k {
	case "id":
		n.has &^= hasID
		n.ID = ""
	case "type":
		n.has &^= hasType
		n.Type = ""
	case "when":
		n.has &^= hasWhen
		n.When = ""
	case "needs":
		n.has &^= hasNeeds
		n.Needs = nil
	case "with":
		n.has &^= hasWith
		n.With = nil
	}
	keepRest(&n.rest, k, v)
}

// setRest is Node.setRest for the document's own members.
func (doc *Document) setRest(k string, v any) {
	switch k {
	case "id":
		doc.has &^= hasID
		doc.ID = ""
	case "nodes":
		doc.has &^= hasNodes
		doc.Nodes = nil
	}
	keepRest(&doc.rest, k, v)
}

// keepRest puts member k, as decoded, in *rest.
func keepRest(rest *map[string]any, k string, v any) {
	if *rest == nil {
		*rest = make(map[string]any, 2)
	}
	(*rest)[k] = v
}

// typed records that member k was read typed, replacing one kept as decoded.
func (n *Node) typed(k string, bit docMembers) {
	n.has |= bit
	if n.rest != nil {
		delete(n.rest, k)
	}
}

// member reads member k of a decoded node.
func (n *Node) member(k string, v any) {
	switch k {
	case "id", "type", "when":
		s, ok := v.(string)
		if !ok {
			break
		}
		switch k {
		case "id":
			n.ID = s
			n.typed(k, hasID)
		case "type":
			n.Type = s
			n.typed(k, hasType)
		default:
			n.When = s
			n.typed(k, hasWhen)
		}
		return
	case "needs":
		if a, ok := v.([]any); ok && allStrings(a) {
			n.Needs = make([]string, len(a))
			for i, e := range a {
				n.Needs[i] = e.(string)
			}
			n.typed(k, hasNeeds)
			return
		}
	case "with":
		if m, ok := v.(map[string]any); ok {
			n.With = m
			n.typed(k, hasWith)
			return
		}
	}
	n.setRest(k, v)
}

func allStrings(a []any) bool {
	for _, e := range a {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

// derive reads what the compile needs from the members kept as decoded;
// a member of the wrong type is left zero (the check reports it).
func (n *Node) derive() {
	if len(n.rest) == 0 {
		return
	}
	n.OnError, _ = n.rest["onError"].(string)
	if needs, ok := n.rest["needs"].([]any); ok {
		n.Needs = make([]string, len(needs))
		for j, id := range needs {
			n.Needs[j], _ = id.(string)
		}
	}
	if t, ok := n.rest["timeoutMs"]; ok {
		n.TimeoutMs, _ = millis(t)
	}
	if r, ok := n.rest["retry"].(map[string]any); ok {
		n.Retry = retryPolicy(r)
	}
}

// nodeFromValue reads a decoded node (a map's with.nodes) by the rules of
// the typed decode.
func nodeFromValue(v any) Node {
	m, ok := v.(map[string]any)
	if !ok {
		return Node{value: v}
	}
	n := Node{isObject: true}
	for k, e := range m {
		n.member(k, e)
	}
	n.derive()
	return n
}

// ParseNodes reads a sub-graph's nodes (a map node's with.nodes), already
// checked with the document.
func ParseNodes(v any) ([]Node, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("got %s, want an array of nodes", jsonTypeOf(v))
	}
	return nodesOf(a), nil
}

// nodesOf reads nodes held as decoded.
func nodesOf(a []any) []Node {
	nodes := make([]Node, len(a))
	for i, e := range a {
		nodes[i] = nodeFromValue(e)
	}
	return nodes
}

func retryPolicy(m map[string]any) *Retry {
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

// Decoder returns the engine's protocol.Decoder.Workflow: raw is
// the workflow object's text, not yet checked to be JSON (the decoder
// refuses what is not, and the body is then read the ordinary way, which
// names the fault), and nesting deeper than maxDepth (the body's cap,
// counted from the document) is left to the ordinary read too.
// A document of more than maxNodes nodes, sub-graphs included, is an
// ErrTooManyNodes, found once the limit is passed.
func Decoder(maxDepth, maxNodes int) func(raw []byte) (any, error) {
	return func(raw []byte) (any, error) {
		d := docDecoder{data: raw, maxDepth: maxDepth, maxNodes: maxNodes}
		return d.document()
	}
}

// Decode decodes a workflow document's text (a child workflow, a
// body the one pass did not take). An error says raw is not JSON, or
// (ErrTooManyNodes) that it holds more than maxNodes nodes (0: no limit),
// sub-graphs included: decoding stops there, so that a 6 MB body of empty
// nodes costs what maxNodes of them do.
//
// The decoder checks the text is JSON as it reads it, so the text is
// scanned once; encoding/json reads it again only when the decoder stops,
// to say why in its words (the error a document that is not JSON gets is
// encoding/json's, and one that is JSON and too big is ErrTooManyNodes).
func Decode(raw []byte, maxNodes int) (*Document, error) {
	d := docDecoder{data: raw, maxDepth: maxDecodeDepth, maxNodes: maxNodes}
	doc, err := d.document()
	if err == nil || json.Valid(raw) {
		return doc, err
	}
	var v any
	if err = json.Unmarshal(raw, &v); err == nil {
		err = errors.New("invalid JSON")
	}
	return nil, err
}

// maxDecodeDepth bounds the decoder's recursion, as encoding/json's
// scanner bounds its nesting.
const maxDecodeDepth = 10_000

var errDecode = errors.New("malformed JSON")

// ErrTooManyNodes is what Decode and Decoder fail with when a document
// holds more than maxNodes nodes, sub-graphs included.
var ErrTooManyNodes = errors.New("too many nodes")

// docDecoder reads a document from JSON text, refusing (with an error,
// never a panic) all the text encoding/json's scanner refuses, and only
// that: FuzzDecodeDocument holds it to json.Valid.
type docDecoder struct {
	data      []byte
	pos       int
	depth     int
	maxDepth  int // 0: maxDecodeDepth
	maxNodes  int // 0: no limit
	nodeCount int
	// needs is where the nodes' needs are cut from, a segment each.
	needs []string
}

func (d *docDecoder) document() (*Document, error) {
	doc := &Document{}
	d.ws()
	if d.peek() != '{' {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		doc.value = v
		return doc, d.end()
	}
	doc.isObject = true
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "id":
			if d.peek() == '"' {
				s, err := d.str()
				doc.ID = s
				doc.has |= hasID
				delete(doc.rest, "id")
				return err
			}
		case "nodes":
			if d.peek() == '[' {
				doc.has |= hasNodes
				delete(doc.rest, "nodes")
				return d.nodes(doc)
			}
		case "input", "output":
			start := d.pos
			if err := d.skip(); err != nil {
				return err
			}
			raw := json.RawMessage(d.data[start:d.pos:d.pos])
			if key[0] == 'i' {
				doc.Input = raw
				doc.has |= hasInput
			} else {
				doc.Output = raw
				doc.has |= hasOutput
			}
			return nil
		}
		v, err := d.value()
		if err != nil {
			return err
		}
		doc.setRest(string(key), v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return doc, d.end()
}

// nodes reads the array of a document's nodes.
func (d *docDecoder) nodes(doc *Document) error {
	doc.Nodes = doc.Nodes[:0]
	return d.array(func() error {
		if err := d.countNode(); err != nil {
			return err
		}
		doc.Nodes = append(doc.Nodes, Node{})
		n := &doc.Nodes[len(doc.Nodes)-1]
		if d.peek() != '{' {
			v, err := d.value()
			n.value = v
			return err
		}
		return d.node(n)
	})
}

func (d *docDecoder) node(n *Node) error {
	n.isObject = true
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "id", "type", "when":
			if d.peek() != '"' {
				break
			}
			s, err := d.str()
			if err != nil {
				return err
			}
			switch key[0] {
			case 'i':
				n.ID = s
				n.typed("id", hasID)
			case 't':
				n.Type = internType(s)
				n.typed("type", hasType)
			default:
				n.When = s
				n.typed("when", hasWhen)
			}
			return nil
		case "needs":
			if d.peek() != '[' {
				break
			}
			start, first := d.pos, len(d.needs)
			ok, err := d.stringArray()
			if err != nil {
				return err
			}
			if ok {
				n.Needs = d.needs[first:len(d.needs):len(d.needs)]
				n.typed("needs", hasNeeds)
				return nil
			}
			d.needs, d.pos = d.needs[:first], start
		case "with":
			if d.peek() != '{' {
				break
			}
			v, err := d.valueIn(inWith)
			if err != nil {
				return err
			}
			n.With = v.(map[string]any)
			n.typed("with", hasWith)
			return nil
		}
		v, err := d.value()
		if err != nil {
			return err
		}
		n.setRest(string(key), v)
		return nil
	})
	n.derive()
	return err
}

// stringArray appends the strings of the array at d.pos to d.needs; ok is
// false (and d.pos past some of it) when an item is not a string.
func (d *docDecoder) stringArray() (ok bool, err error) {
	ok = true
	depth := d.depth
	err = d.array(func() error {
		if d.peek() != '"' {
			ok = false
			return errNotStrings
		}
		s, err := d.str()
		d.needs = append(d.needs, s)
		return err
	})
	if err == errNotStrings {
		d.depth = depth
		return false, nil
	}
	return ok, err
}

var errNotStrings = errors.New("not strings")

// internType returns the node types the engine knows as constants, so
// that a document's thousand "set"s are one string.
func internType(s string) string {
	switch s {
	case "set":
		return "set"
	case "fail":
		return "fail"
	case "map":
		return "map"
	case "workflow":
		return "workflow"
	case "model":
		return "model"
	case "agent":
		return "agent"
	case "tool":
		return "tool"
	case "http":
		return "http"
	case "code":
		return "code"
	}
	return s
}

// internKey returns the with members the node types read as constants.
func internKey(b []byte) string {
	switch string(b) {
	case "value":
		return "value"
	case "message":
		return "message"
	case "code":
		return "code"
	case "items":
		return "items"
	case "nodes":
		return "nodes"
	case "output":
		return "output"
	case "input":
		return "input"
	case "workflow":
		return "workflow"
	case "prompt":
		return "prompt"
	case "system":
		return "system"
	case "role":
		return "role"
	case "content":
		return "content"
	case "url":
		return "url"
	case "method":
		return "method"
	case "headers":
		return "headers"
	case "body":
		return "body"
	case "query":
		return "query"
	case "toolset":
		return "toolset"
	case "tool":
		return "tool"
	case "arguments":
		return "arguments"
	}
	return string(b)
}

// countNode counts one more node against maxNodes.
func (d *docDecoder) countNode() error {
	if d.nodeCount++; d.maxNodes > 0 && d.nodeCount > d.maxNodes {
		return ErrTooManyNodes
	}
	return nil
}

// Where a value decoded as a generic value sits, for counting the nodes
// of sub-graphs (a with's nodes, their nodes' with, and so on).
const (
	inValue = iota
	inWith
	inNodes
	inNode
)

// value decodes any JSON value: objects as map[string]any, arrays as
// []any, numbers as json.Number, as encoding/json with UseNumber does.
func (d *docDecoder) value() (any, error) { return d.valueIn(inValue) }

// valueIn is value for a value at where (inValue and the rest).
func (d *docDecoder) valueIn(where int) (any, error) {
	switch d.peek() {
	case '{':
		m := map[string]any{}
		err := d.object(func(key []byte) error {
			in := inValue
			switch {
			case where == inWith && string(key) == "nodes":
				in = inNodes
			case where == inNode && string(key) == "with":
				in = inWith
			}
			v, err := d.valueIn(in)
			m[internKey(key)] = v
			return err
		})
		return m, err
	case '[':
		a := []any{}
		err := d.array(func() error {
			in := inValue
			if where == inNodes {
				if err := d.countNode(); err != nil {
					return err
				}
				in = inNode
			}
			v, err := d.valueIn(in)
			a = append(a, v)
			return err
		})
		return a, err
	case '"':
		return d.str()
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	start := d.pos
	if err := d.number(); err != nil {
		return nil, err
	}
	return json.Number(d.data[start:d.pos]), nil
}

// number moves d.pos past the number there, which must be written as
// JSON writes numbers: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *docDecoder) number() error {
	if d.peek() == '-' {
		d.pos++
	}
	switch c := d.peek(); {
	case c == '0':
		d.pos++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return errDecode
	}
	if d.peek() == '.' {
		d.pos++
		if !d.digits() {
			return errDecode
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.pos++
		if c := d.peek(); c == '+' || c == '-' {
			d.pos++
		}
		if !d.digits() {
			return errDecode
		}
	}
	return nil
}

// digits moves d.pos past the decimal digits there, reporting whether
// there was one.
func (d *docDecoder) digits() bool {
	start := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	return d.pos > start
}

func (d *docDecoder) literal(s string) error {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(s)) {
		return errDecode
	}
	d.pos += len(s)
	return nil
}

// enter counts one more level of nesting, refusing one past the depth.
func (d *docDecoder) enter() error {
	if d.depth++; d.depth > d.maxDepth && d.maxDepth > 0 || d.depth > maxDecodeDepth {
		return errDecode
	}
	return nil
}

// object reads an object at d.pos, calling member with each key (valid
// until the next read), d.pos at its value, which member must read.
func (d *docDecoder) object(member func(key []byte) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '{'
	d.ws()
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		key, err := d.key()
		if err != nil {
			return err
		}
		d.ws()
		if d.peek() != ':' {
			return errDecode
		}
		d.pos++
		d.ws()
		if err := member(key); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
			d.ws()
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return errDecode
		}
	}
}

// array reads an array at d.pos, calling item with d.pos at each item,
// which item must read.
func (d *docDecoder) array(item func() error) error {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '['
	d.ws()
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
			d.ws()
		case ']':
			d.pos++
			d.depth--
			return nil
		default:
			return errDecode
		}
	}
}

// key returns an object key's text, unquoted; when it has no escapes it
// is the document's own bytes.
func (d *docDecoder) key() ([]byte, error) {
	if d.peek() != '"' {
		return nil, errDecode
	}
	end, plain := d.stringEnd()
	if end < 0 {
		return nil, errDecode
	}
	if plain {
		b := d.data[d.pos+1 : end]
		d.pos = end + 1
		return b, nil
	}
	s, err := d.str()
	return []byte(s), err
}

// str reads a string at d.pos.
func (d *docDecoder) str() (string, error) {
	if d.peek() != '"' {
		return "", errDecode
	}
	end, plain := d.stringEnd()
	if end < 0 {
		return "", errDecode
	}
	text := d.data[d.pos : end+1]
	d.pos = end + 1
	if plain {
		return string(text[1 : len(text)-1]), nil
	}
	// Escapes and bytes that are not UTF-8 are encoding/json's to read.
	var s string
	if err := json.Unmarshal(text, &s); err != nil {
		return "", err
	}
	return s, nil
}

// stringEnd finds the closing quote of the string at d.pos; plain says
// the string has no escapes and is UTF-8, so that its bytes are its value.
func (d *docDecoder) stringEnd() (end int, plain bool) {
	plain = true
	ascii := true
	for i := d.pos + 1; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			if !ascii && plain {
				plain = utf8.Valid(d.data[d.pos+1 : i])
			}
			return i, plain
		case c == '\\':
			plain = false
			i++
		case c < 0x20:
			return -1, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return -1, false
}

// validEscapes reports whether every backslash of a string's text (its
// quotes left out) starts an escape JSON has: \", \\, \/, \b, \f, \n, \r,
// \t or \u and four hex digits.
func validEscapes(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i++; i == len(b) {
			return false
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(b) {
				return false
			}
			for _, c := range b[i+1 : i+5] {
				if !isHex(c) {
					return false
				}
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// skip reads past the value at d.pos.
func (d *docDecoder) skip() error {
	switch d.peek() {
	case '{':
		return d.object(func([]byte) error { return d.skip() })
	case '[':
		return d.array(d.skip)
	case '"':
		end, plain := d.stringEnd()
		if end < 0 || !plain && !validEscapes(d.data[d.pos+1:end]) {
			return errDecode
		}
		d.pos = end + 1
		return nil
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	return d.number()
}

func (d *docDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *docDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\r', '\n':
			d.pos++
		default:
			return
		}
	}
}

// end checks nothing but white space follows the document.
func (d *docDecoder) end() error {
	d.ws()
	if d.pos != len(d.data) {
		return errors.New("invalid character after top-level value")
	}
	return nil
}
