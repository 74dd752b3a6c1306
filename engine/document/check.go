package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Prepare, stage 2: check. A decoded document (decode.go) is held
// to the rules of docs/workflow.schema.json without a generic JSON Schema
// pass: the same decisions, at the same paths, with the validator's
// messages, to which a misspelt member adds a "did you mean" (nearMisses)
// that no validator says. The schema stays the published contract; a
// node type's with is checked by its With (with.go), from which the
// schema's with definitions are generated too (internal/schemagen).
// TestDocSchemaAgreesWithLibrary and FuzzDocSchema run both over a corpus
// and fail on any difference, so a change to one without the other is
// caught. The document and its nodes are read typed; a with, and the
// members decode kept as decoded, are values as a json.Decoder with
// UseNumber produces them.

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

func (c *docChecker) document(doc *Document) {
	if !doc.isObject {
		c.typeErr(doc.value, "object")
		return
	}
	_, restNodes := doc.rest["nodes"]
	if doc.has&hasNodes == 0 && !restNodes {
		c.missing([]string{"nodes"})
	}
	if doc.has&hasID != 0 {
		c.push("id")
		c.min1(doc.ID)
		c.pop()
	}
	if doc.has&hasNodes != 0 {
		c.push("nodes")
		c.nodeList(doc.Nodes, false)
		c.pop()
	}
	if doc.has&hasInput != 0 {
		c.push("input")
		c.objectOrBool(rawKind(doc.Input))
		c.pop()
	}
	c.known(doc.rest, (*docChecker).documentMember)
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

// documentMember checks a document's member held as decoded.
func (c *docChecker) documentMember(k string, val any) bool {
	switch k {
	case "$schema", "name", "description":
		c.str(val)
	case "id":
		c.strMin1(val)
	case "version":
		if d, _, ok := jsonNumber(val); !ok || d.huge || d.cmp(decOne) != 0 {
			c.fail("value must be %s", "1")
		}
	case "input":
		c.objectOrBool(val)
	case "nodes":
		c.nodes(val, false)
	case "output":
	default:
		return false
	}
	return true
}

// nodes checks an array of nodes held as decoded (a map's with.nodes, a
// document's nodes that are not an array); nonEmpty is the map node's
// minItems 1.
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

func (c *docChecker) id(v any) {
	if s, ok := c.str(v); ok {
		c.idText(s)
	}
}

// idText is id for a member decoded as a string.
func (c *docChecker) idText(s string) {
	c.pattern(s, idPattern, isNodeID(s))
}

func isNodeID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '_' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z':
		case i > 0 && (b == '-' || b >= '0' && b <= '9'):
		default:
			return false
		}
	}
	return true
}

func (c *docChecker) node(n *Node) {
	if !n.isObject {
		c.typeErr(n.value, "object")
		return
	}
	_, restID := n.rest["id"]
	_, restType := n.rest["type"]
	withID, withType := n.has&hasID != 0 || restID, n.has&hasType != 0 || restType
	switch {
	case !withID && !withType:
		c.missing([]string{"id", "type"})
	case !withID:
		c.missing([]string{"id"})
	case !withType:
		c.missing([]string{"type"})
	}
	if n.has&hasID != 0 {
		c.push("id")
		c.idText(n.ID)
		c.pop()
	}
	if n.has&hasType != 0 {
		c.push("type")
		c.min1(n.Type)
		c.pop()
	}
	if n.has&hasWhen != 0 {
		c.push("when")
		c.min1(n.When)
		c.pop()
	}
	if n.has&hasNeeds != 0 {
		c.push("needs")
		c.needList(n.Needs)
		c.pop()
	}
	c.known(n.rest, (*docChecker).nodeMember)
	// The schema's if/then: a rule applies when type is there and equal.
	// A node without a type has no with to judge: "missing property
	// 'type'" is its error, not every node type's complaint about its with.
	typ, typOK := n.Type, n.has&hasType != 0
	if !typOK && restType {
		v := n.rest["type"]
		typ, typOK = v.(string)
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

// nodeMember checks one member of a node held as decoded.
func (c *docChecker) nodeMember(k string, val any) bool {
	switch k {
	case "id":
		c.id(val)
	case "type", "when":
		c.strMin1(val)
	case "name", "description":
		c.str(val)
	case "needs":
		c.needs(val)
	case "with":
		c.object(val)
	case "retry":
		c.retry(val)
	case "timeoutMs":
		c.integer(val, decOne, nil)
	case "onError":
		c.enum(val, "fail", "continue")
	default:
		return false
	}
	return true
}

func (c *docChecker) needs(v any) {
	a, ok := c.array(v)
	if !ok {
		return
	}
	if j, i := firstDuplicate(a); i >= 0 {
		c.fail("items at %d and %d are equal", j, i)
	}
	c.items(a, (*docChecker).id)
}

// needList is needs for an array decoded as strings.
func (c *docChecker) needList(needs []string) {
	if j, i := firstDuplicateString(needs); i >= 0 {
		c.fail("items at %d and %d are equal", j, i)
	}
	for i, s := range needs {
		c.pushIdx(i)
		c.idText(s)
		c.pop()
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

func (c *docChecker) retry(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		switch k {
		case "maxAttempts":
			c.integer(val, decOne, &decTen)
		case "backoffMs", "maxBackoffMs":
			c.integer(val, decZero, nil)
		case "factor":
			c.number(val, &decOne)
		default:
			return false
		}
		return true
	})
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

func (c *docChecker) strMin1(v any) {
	if s, ok := c.str(v); ok {
		c.min1(s)
	}
}

// min1 is strMin1 for a member decoded as a string.
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

// members checks an object: that it has the required members, check on
// each member, and that check knows every member. It returns the object
// and whether v is one.
func (c *docChecker) members(v any, required []string, check func(c *docChecker, k string, val any) bool) (map[string]any, bool) {
	m, ok := c.object(v)
	if !ok {
		return nil, false
	}
	c.required(m, required...)
	c.known(m, check)
	return m, true
}

// known runs check on each member of m, at its path, and reports the
// members check does not know as additional.
func (c *docChecker) known(m map[string]any, check func(c *docChecker, k string, val any) bool) {
	var extra []string
	for k, val := range m {
		c.push(k)
		if !check(c, k, val) {
			extra = append(extra, k)
		}
		c.pop()
	}
	c.additional(extra, check)
}
