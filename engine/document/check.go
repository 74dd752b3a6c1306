package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Prepare, stage 2: check. A decoded document (decode.go) is held to
// the rules of docs/workflow.schema.json without a generic JSON Schema
// pass: the same decisions, at the same paths, with the validator's
// messages, to which a misspelt member adds a "did you mean" (nearMisses)
// that no validator says. The rules are not written here: the check walks
// the spec the schema is generated from (internal/schemagen), the
// document's (Workflow, spec.go) and each node type's With (with.go), so
// the published contract and the check cannot differ. The document and its
// nodes are read typed; a with, and the members decode kept as decoded,
// are values as a json.Decoder with UseNumber produces them.

// Parse decodes raw (stage 1) and checks it against the rules of
// the workflow schema (stage 2). path is where the document sits in the request
// ("workflow", "runtime.workflows[2]"). A document that breaks a rule is
// still returned as far as it goes, so that the graph, expressions and
// input can be checked too; nil means there is nothing to check. withs
// are the node types' with, by type: a node of another type has its with
// judged by no rule here (the engine refuses the type).
func Parse(path string, raw json.RawMessage, maxNodes int, withs Withs, d *Problems) *Document {
	doc, err := Decode(raw, maxNodes)
	if errors.Is(err, ErrTooManyNodes) {
		d.Addf(path+".nodes", "the workflow has more than maxNodes (%d) nodes", maxNodes)
		return nil
	}
	if err != nil {
		d.Addf(path, "malformed JSON: %v", err)
		return nil
	}
	return Check(path, doc, withs, d)
}

// Check checks a decoded document against the workflow schema's rules and
// withs (see Parse), recording what fails in d, and
// turns the numbers of its nodes' with into the float64s expressions and
// templates work on.
func Check(path string, doc *Document, withs Withs, d *Problems) *Document {
	reportLeaves(checkDocumentSchema(path, doc, withs), d)
	for i := range doc.Nodes {
		if w := doc.Nodes[i].With; w != nil {
			if bad := floatNumbers(w); bad != "" {
				d.Addf(fmt.Sprintf("%s.nodes[%d].with", path, i), "the number %s is out of range", bad)
			}
		}
	}
	return doc
}

// floatNumbers turns the exact numbers under v into float64s in place, the
// representation expressions and templates work on. It returns the text of
// a number no float64 holds, "" when there is none; of several, the least
// text, so that the detail does not depend on the order a map is walked.
// Every other number is turned all the same: the kind's checks that
// follow would otherwise see some of them still exact, depending on that
// order too.
func floatNumbers(v any) (bad string) {
	worse := func(b string) {
		if b != "" && (bad == "" || b < bad) {
			bad = b
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			f, num, b := floatElem(e)
			worse(b)
			if num {
				v[k] = f
			}
		}
	case []any:
		for i, e := range v {
			f, num, b := floatElem(e)
			worse(b)
			if num {
				v[i] = f
			}
		}
	}
	return bad
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

// The document and its nodes are held partly typed (decode.go): their
// check walks their spec (spec.go) as a with's does (with.go), taking
// each member from where the decode put it. Which members it holds typed,
// and by which bit, is the decode's to say (docTyped, nodeTyped).
var (
	docObject  = newTypedObject(Workflow.Fields, docTyped)
	nodeObject = newTypedObject(node.Fields, nodeTyped)
)

// typedObject is the spec of an object the decode holds partly typed,
// indexed once for its check, which runs for every node of every request.
type typedObject struct {
	fields []Field
	// required are its required fields, each with the bit of its typed
	// value (0: never typed).
	required []typedField
	// typed are the fields the decode holds typed, less those no rule
	// could refuse as held: one of any value, and a with (held typed only
	// when it is an object) whose type is any object.
	typed []typedField
}

type typedField struct {
	f   *Field
	bit docMembers
}

func newTypedObject(fields []Field, typed map[string]docMembers) *typedObject {
	o := &typedObject{fields: fields}
	for i := range fields {
		f := &fields[i]
		bit := typed[f.Name]
		if f.Required {
			o.required = append(o.required, typedField{f, bit})
		}
		t := &f.Type
		anyObject := t.Kind == Object && t.Fields == nil && t.Values == nil && !t.Template
		if bit != 0 && t.Kind != Any && !(bit == hasWith && anyObject) {
			o.typed = append(o.typed, typedField{f, bit})
		}
	}
	return o
}

// missingOf reports the required members of o that an object lacks:
// neither held typed (has) nor kept in rest.
func (c *docChecker) missingOf(o *typedObject, has docMembers, rest map[string]any) {
	var missing []string
	for _, r := range o.required {
		if has&r.bit != 0 {
			continue
		}
		if _, ok := rest[r.f.Name]; !ok {
			missing = append(missing, r.f.Name)
		}
	}
	if missing != nil {
		c.missing(missing)
	}
}

func (c *docChecker) document(doc *Document) {
	if !doc.isObject {
		c.typeErr(doc.value, "object")
		return
	}
	c.missingOf(docObject, doc.has, doc.rest)
	for _, m := range docObject.typed {
		if doc.has&m.bit == 0 {
			continue
		}
		c.push(m.f.Name)
		switch m.bit {
		case hasID:
			c.text(&m.f.Type, doc.ID)
		case hasNodes:
			c.nodeList(doc.Nodes, m.f.Type.Kind == Nodes)
		case hasInput:
			c.value(&m.f.Type, rawKind(doc.Input))
		case hasOutput:
			c.value(&m.f.Type, rawKind(doc.Output))
		}
		c.pop()
	}
	c.rest(docObject.fields, doc.rest)
}

// rawKind stands for the JSON type of raw, a value as written, in a check
// that looks only at its type.
func rawKind(raw json.RawMessage) any {
	switch firstNonSpace(raw) {
	case '{':
		return map[string]any(nil)
	case '[':
		return []any(nil)
	case '"':
		return ""
	case 't', 'f':
		return true
	case 'n':
		return nil
	}
	return json.Number("0")
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// nodes checks an array of nodes held as decoded (a map's with.nodes);
// nonEmpty is the map node's minItems 1.
func (c *docChecker) nodes(v any, nonEmpty bool) {
	a, ok := c.array(v)
	if !ok {
		return
	}
	c.nodeList(nodesOf(a), nonEmpty)
}

// nodeList checks decoded nodes; nonEmpty is the map node's minItems 1.
func (c *docChecker) nodeList(nodes []Node, nonEmpty bool) {
	if nonEmpty && len(nodes) == 0 {
		c.fail("minItems: got %d, want %d", 0, 1)
	}
	for i := range nodes {
		c.pushIdx(i)
		c.node(&nodes[i])
		c.pop()
	}
}

func (c *docChecker) node(n *Node) {
	if !n.isObject {
		c.typeErr(n.value, "object")
		return
	}
	c.missingOf(nodeObject, n.has, n.rest)
	for _, m := range nodeObject.typed {
		if n.has&m.bit == 0 {
			continue
		}
		c.push(m.f.Name)
		switch m.bit {
		case hasID:
			c.text(&m.f.Type, n.ID)
		case hasType:
			c.text(&m.f.Type, n.Type)
		case hasWhen:
			c.text(&m.f.Type, n.When)
		case hasNeeds:
			c.texts(&m.f.Type, n.Needs)
		case hasWith:
			c.value(&m.f.Type, n.With)
		}
		c.pop()
	}
	c.rest(nodeObject.fields, n.rest)
	// The schema's if/then: a rule applies when type is there and equal.
	// A node without a type has no with to judge: "missing property
	// 'type'" is its error, not every node type's complaint about its with.
	typ, typOK := n.Type, n.has&hasType != 0
	if !typOK {
		typ, typOK = n.rest["type"].(string)
	}
	var with any
	hasWith := n.has&hasWith != 0
	if hasWith {
		with = n.With
	} else {
		with, hasWith = n.rest["with"]
	}
	if w := c.withs[typ]; w != nil && typOK {
		if w.Required && !hasWith {
			c.missing([]string{"with"})
		}
		if hasWith {
			c.push("with")
			c.with(w, with)
			c.pop()
		}
	}
}

// firstDuplicateString is firstDuplicate for strings, which are equal as
// JSON values when they are equal as strings.
func firstDuplicateString(a []string) (int, int) {
	if len(a) < 2 {
		return -1, -1
	}
	if len(a) <= 8 {
		for i := 1; i < len(a); i++ {
			for j := range i {
				if a[j] == a[i] {
					return j, i
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, len(a))
	for i, s := range a {
		if j, ok := seen[s]; ok {
			return j, i
		}
		seen[s] = i
	}
	return -1, -1
}

// checkDocumentSchema checks a decoded document and returns what failed,
// located under base ("workflow").
func checkDocumentSchema(base string, doc *Document, withs Withs) []schemaLeaf {
	c := &docChecker{base: base, withs: withs, stack: make([]docSeg, 0, 16)}
	c.document(doc)
	return c.leaves
}

func (c *docChecker) push(key string) { c.stack = append(c.stack, docSeg{key: key, idx: -1}) }

func (c *docChecker) pushIdx(i int) { c.stack = append(c.stack, docSeg{idx: i}) }

func (c *docChecker) pop() { c.stack = c.stack[:len(c.stack)-1] }

func (c *docChecker) loc() string {
	tokens := make([]string, len(c.stack))
	for i, s := range c.stack {
		if s.key == "" && s.idx >= 0 {
			tokens[i] = strconv.Itoa(s.idx)
		} else {
			tokens[i] = s.key
		}
	}
	return joinPath(c.base, tokens)
}

func (c *docChecker) fail(format string, args ...any) {
	if c.quiet > 0 {
		c.fails++
		return
	}
	c.leaves = append(c.leaves, schemaLeaf{loc: c.loc(), msg: schemaSprintf(format, args...)})
}

func jsonTypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "invalid"
}

func (c *docChecker) typeErr(v any, want string) {
	if c.quiet > 0 {
		c.fails++ // an alternative of an anyOf: no message, not even its arguments
		return
	}
	c.fail("got %s, want %s", jsonTypeOf(v), want)
}

// object reports v when it is not an object.
func (c *docChecker) object(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.typeErr(v, "object")
	}
	return m, ok
}

// array reports v when it is not an array.
func (c *docChecker) array(v any) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		c.typeErr(v, "array")
	}
	return a, ok
}

func (c *docChecker) str(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		c.typeErr(v, "string")
	}
	return s, ok
}

// min1 is the rule of a minLength of 1.
func (c *docChecker) min1(s string) {
	if s == "" {
		c.fail("minLength: got %d, want %d", 0, 1)
	}
}

func (c *docChecker) boolean(v any) {
	if _, ok := v.(bool); !ok {
		c.typeErr(v, "boolean")
	}
}

func (c *docChecker) objectOrBool(v any) {
	switch v.(type) {
	case map[string]any, bool:
	default:
		c.typeErr(v, "boolean or object")
	}
}

func (c *docChecker) pattern(s, pattern string, ok bool) {
	if !ok {
		c.fail("%s does not match pattern %s", schemaQuote(s), schemaQuote(pattern))
	}
}

// schemaQuote quotes s as the validator does in its messages.
func schemaQuote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}
