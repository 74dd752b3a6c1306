package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Prepare, stage 2: check. A decoded document (prepare_decode.go) is held
// to the rules of docs/workflow.schema.json without a generic JSON Schema
// pass: the same decisions, at the same paths, with the validator's
// messages. The schema stays the published contract;
// TestDocSchemaAgreesWithLibrary and FuzzDocSchema run both over a corpus
// and fail on any difference, so a change to one without the other is
// caught. The document and its nodes are read typed; a with, and the
// members decode kept as decoded, are values as a json.Decoder with
// UseNumber produces them.

// parseDocument decodes raw and checks it against the rules of the
// workflow schema. path is where the document sits in the request
// ("workflow", "runtime.workflows[2]"). A document that breaks a rule is
// still returned as far as it goes, so that the graph, expressions and
// input can be checked too; nil means there is nothing to check.
func parseDocument(path string, raw json.RawMessage, d *detailList) *document {
	doc, err := decodeDocument(raw)
	if err != nil {
		d.add(path, "malformed JSON: %v", err)
		return nil
	}
	return checkDocument(path, doc, d)
}

// checkDocument checks a decoded document, recording what fails in d, and
// turns the numbers of its nodes' with into the float64s expressions and
// templates work on.
func checkDocument(path string, doc *document, d *detailList) *document {
	reportLeaves(checkDocumentSchema(path, doc), d)
	for i := range doc.Nodes {
		if w := doc.Nodes[i].With; w != nil {
			if bad := floatNumbers(w); bad != "" {
				d.add(fmt.Sprintf("%s.nodes[%d].with", path, i), "the number %s is out of range", bad)
			}
		}
	}
	return doc
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

// parseNodes reads a sub-graph's nodes (a map node's with.nodes), already
// checked with the document.
func parseNodes(v any) ([]nodeDoc, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("got %s, want an array of nodes", jsonTypeOf(v))
	}
	nodes := make([]nodeDoc, len(a))
	for i, e := range a {
		nodes[i] = nodeFromValue(e)
	}
	return nodes, nil
}

// Patterns of the schema, as the validator quotes them in messages.
const (
	idPattern       = `^[A-Za-z_][A-Za-z0-9_-]*$`
	templatePattern = `\$\{\{`
	failCodePattern = `^[A-Z][A-Z0-9_]*$|\$\{\{`
)

// schemaLeaf is one failed rule: where, what, and the members a missing or
// unknown member rule names (reported at the object, covering the member).
type schemaLeaf struct {
	loc     string
	msg     string
	members []string
}

// docSeg is one step of the location being checked: a member name or,
// when key is empty and idx >= 0, an array index.
type docSeg struct {
	key string
	idx int
}

// docChecker walks a document, collecting leaves. While quiet > 0 (trying
// the alternatives of an anyOf) it only counts failures, building nothing.
type docChecker struct {
	base   string
	stack  []docSeg
	leaves []schemaLeaf
	quiet  int
	fails  int
}

// checkDocumentSchema checks a decoded document and returns what failed,
// located under base ("workflow").
func checkDocumentSchema(base string, doc *document) []schemaLeaf {
	c := &docChecker{base: base, stack: make([]docSeg, 0, 16)}
	c.document(doc)
	return c.leaves
}

func (c *docChecker) push(key string) { c.stack = append(c.stack, docSeg{key: key, idx: -1}) }
func (c *docChecker) pushIdx(i int)   { c.stack = append(c.stack, docSeg{idx: i}) }
func (c *docChecker) pop()            { c.stack = c.stack[:len(c.stack)-1] }

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
	c.leaves = append(c.leaves, schemaLeaf{loc: c.loc(), msg: printer.Sprintf(format, args...)})
}

func (c *docChecker) failMembers(msg string, members []string) {
	if c.quiet > 0 {
		c.fails++
		return
	}
	c.leaves = append(c.leaves, schemaLeaf{loc: c.loc(), msg: msg, members: members})
}

// anyOf passes when one alternative does; otherwise every alternative's
// failures are reported, as the validator does.
func (c *docChecker) anyOf(v any, alts ...func(*docChecker, any)) {
	c.quiet++
	for _, alt := range alts {
		before := c.fails
		alt(c, v)
		if c.fails == before {
			c.quiet--
			return
		}
	}
	c.quiet--
	if c.quiet > 0 {
		return // the enclosing anyOf has counted the failure
	}
	for _, alt := range alts {
		alt(c, v)
	}
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

// items checks each item of a, located at its index.
func (c *docChecker) items(a []any, check func(*docChecker, any)) {
	for i, v := range a {
		c.pushIdx(i)
		check(c, v)
		c.pop()
	}
}

func (c *docChecker) required(m map[string]any, names ...string) {
	var missing []string
	for _, n := range names {
		if _, ok := m[n]; !ok {
			missing = append(missing, n)
		}
	}
	c.missing(missing)
}

// missing reports required members that are absent.
func (c *docChecker) missing(missing []string) {
	switch len(missing) {
	case 0:
	case 1:
		c.failMembers(printer.Sprintf("missing property %s", schemaQuote(missing[0])), missing)
	default:
		c.failMembers(printer.Sprintf("missing properties %s", schemaJoinQuoted(missing)), missing)
	}
}

// additional reports members no rule names.
func (c *docChecker) additional(extra []string) {
	if len(extra) == 0 {
		return
	}
	slices.Sort(extra)
	c.failMembers(additionalMessage(extra), extra)
}

func additionalMessage(names []string) string {
	return printer.Sprintf("additional properties %s not allowed", schemaJoinQuoted(names))
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

var (
	decZero = decimal{}
	decOne  = decimal{digits: "1"}
	decTen  = decimal{digits: "1", exp: 1}
)

// integer checks an integer with a minimum and, when max is set, a maximum.
func (c *docChecker) integer(v any, min decimal, max *decimal) {
	d, text, ok := jsonNumber(v)
	if !ok || !d.isInt() {
		c.typeErr(v, "integer")
		return
	}
	c.bounds(d, text, min, max)
}

func (c *docChecker) number(v any, min *decimal) {
	d, text, ok := jsonNumber(v)
	if !ok {
		c.typeErr(v, "number")
		return
	}
	if min != nil {
		c.bounds(d, text, *min, nil)
	}
}

func (c *docChecker) bounds(d decimal, text string, min decimal, max *decimal) {
	if d.cmp(min) < 0 {
		c.fail("minimum: got %v, want %v", decFloat(text), decFloat(min.String()))
	}
	if max != nil && d.cmp(*max) > 0 {
		c.fail("maximum: got %v, want %v", decFloat(text), decFloat(max.String()))
	}
}

func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	s := d.digits + "e" + strconv.Itoa(d.exp)
	if d.neg {
		s = "-" + s
	}
	return s
}

// decFloat is the float64 nearest to a number's text, as the validator
// prints it.
func decFloat(text string) float64 {
	f, _ := strconv.ParseFloat(text, 64)
	return f
}

func (c *docChecker) enum(v any, values ...string) {
	s, ok := v.(string)
	if ok && slices.Contains(values, s) {
		return
	}
	if len(values) == 1 {
		c.fail("value must be %s", schemaQuote(values[0]))
		return
	}
	c.fail("value must be one of %s", schemaJoinQuoted(values))
}

func (c *docChecker) document(doc *document) {
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
	var extra []string
	for k, val := range doc.rest {
		c.push(k)
		if !c.documentMember(k, val) {
			extra = append(extra, k)
		}
		c.pop()
	}
	c.additional(extra)
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
	docs := make([]nodeDoc, len(a))
	for i, e := range a {
		docs[i] = nodeFromValue(e)
	}
	c.nodeList(docs, nonEmpty)
}

// nodeList checks decoded nodes; nonEmpty is the map node's minItems 1.
func (c *docChecker) nodeList(nodes []nodeDoc, nonEmpty bool) {
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

// withRules are the node schema's allOf: each node type's with, and
// whether it is required.
var withRules = []struct {
	typ      string
	required bool
}{
	{"set", false}, {"fail", false}, {"map", true}, {"workflow", true},
	{"model", true}, {"agent", true}, {"tool", true}, {"http", true},
	{"code", true},
}

func (c *docChecker) with(typ string, v any) {
	switch typ {
	case "set":
		c.withSet(v)
	case "fail":
		c.withFail(v)
	case "map":
		c.withMap(v)
	case "workflow":
		c.withWorkflow(v)
	case "model":
		c.withModel(v)
	case "agent":
		c.withAgent(v)
	case "tool":
		c.withTool(v)
	case "http":
		c.withHTTP(v)
	case "code":
		c.withCode(v)
	}
}

func (c *docChecker) withCode(v any) {
	c.members(v, []string{"code"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "code":
			c.str(val)
		case "input":
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) node(n *nodeDoc) {
	if !n.isObject {
		c.typeErr(n.value, "object")
		return
	}
	_, restID := n.restValue("id")
	_, restType := n.restValue("type")
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
	var extra []string
	for k, val := range n.rest {
		c.push(k)
		if !c.nodeMember(k, val) {
			extra = append(extra, k)
		}
		c.pop()
	}
	c.additional(extra)
	// The schema's if/then: a rule applies when type is absent or equal.
	typ, typOK := n.Type, n.has&hasType != 0
	if !typOK && restType {
		v, _ := n.restValue("type")
		typ, typOK = v.(string)
	}
	var with any
	hasWith := n.has&hasWith != 0
	if hasWith {
		with = n.With
	} else {
		with, hasWith = n.restValue("with")
	}
	for _, r := range withRules {
		if withType && (!typOK || typ != r.typ) {
			continue
		}
		if r.required && !hasWith {
			c.missing([]string{"with"})
		}
		if hasWith {
			c.push("with")
			c.with(r.typ, with)
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

func (c *docChecker) template(v any) {
	if s, ok := c.str(v); ok {
		c.pattern(s, templatePattern, strings.Contains(s, "${{"))
	}
}

func (c *docChecker) intOrTemplate(v any) {
	c.anyOf(v, func(c *docChecker, v any) { c.integer(v, decZero, nil) }, (*docChecker).template)
}

func (c *docChecker) numberOrTemplate(v any) {
	c.anyOf(v, func(c *docChecker, v any) { c.number(v, nil) }, (*docChecker).template)
}

func (c *docChecker) objectOrTemplate(v any) {
	c.anyOf(v, func(c *docChecker, v any) { c.object(v) }, (*docChecker).template)
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
	var extra []string
	for k, val := range m {
		c.push(k)
		if !check(c, k, val) {
			extra = append(extra, k)
		}
		c.pop()
	}
	c.additional(extra)
	return m, true
}

func (c *docChecker) withSet(v any) {
	c.members(v, nil, func(c *docChecker, k string, _ any) bool { return k == "value" })
}

func (c *docChecker) withFail(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		switch k {
		case "message":
			c.str(val)
		case "code":
			if s, ok := c.str(val); ok {
				c.pattern(s, failCodePattern, isErrorCode(s) || strings.Contains(s, "${{"))
			}
		default:
			return false
		}
		return true
	})
}

func isErrorCode(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if b := s[i]; !(b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

func (c *docChecker) withMap(v any) {
	c.members(v, []string{"items", "nodes"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "items":
			c.anyOf(val, func(c *docChecker, v any) { c.array(v) }, (*docChecker).template)
		case "concurrency":
			c.anyOf(val, func(c *docChecker, v any) { c.integer(v, decOne, nil) }, (*docChecker).template)
		case "nodes":
			c.nodes(val, true)
		case "output":
		case "distribute":
			c.withDistribute(val)
		default:
			return false
		}
		return true
	})
}

// withDistribute checks a map's distribute (engine/distribute.go).
func (c *docChecker) withDistribute(v any) {
	c.members(v, []string{"invocations"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "batchSize", "invocations":
			c.integer(val, decOne, nil)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) withWorkflow(v any) {
	c.members(v, []string{"workflow"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "workflow":
			c.strMin1(val)
		case "input":
		default:
			return false
		}
		return true
	})
}

// modelMember checks the members model and agent nodes share.
func (c *docChecker) modelMember(k string, val any) bool {
	switch k {
	case "role":
		c.strMin1(val)
	case "system", "prompt":
		c.str(val)
	case "messages":
		c.anyOf(val, (*docChecker).template, (*docChecker).messageList)
	case "temperature":
		c.numberOrTemplate(val)
	case "maxTokens":
		c.intOrTemplate(val)
	default:
		return false
	}
	return true
}

func (c *docChecker) messageList(v any) {
	if a, ok := c.array(v); ok {
		c.items(a, (*docChecker).message)
	}
}

func (c *docChecker) message(v any) {
	c.members(v, []string{"role", "content"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "role":
			c.enum(val, "user", "assistant")
		case "content":
			c.str(val)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) withModel(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		if k == "json" {
			c.objectOrBool(val)
			return true
		}
		return c.modelMember(k, val)
	})
}

func (c *docChecker) withAgent(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		switch k {
		case "toolsets", "tools":
			c.nameList(val)
		case "maxSteps":
			c.intOrTemplate(val)
		default:
			return c.modelMember(k, val)
		}
		return true
	})
}

func (c *docChecker) nameList(v any) {
	if a, ok := c.array(v); ok {
		c.items(a, (*docChecker).strMin1)
	}
}

func (c *docChecker) withTool(v any) {
	c.members(v, []string{"toolset", "tool"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "toolset", "tool":
			c.strMin1(val)
		case "arguments":
			c.objectOrTemplate(val)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) withHTTP(v any) {
	c.members(v, []string{"url"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "method":
			c.str(val)
		case "url":
			c.strMin1(val)
		case "query":
			c.objectOrTemplate(val)
		case "headers":
			c.anyOf(val, (*docChecker).stringMap, (*docChecker).template)
		case "body":
		case "timeoutMs":
			c.intOrTemplate(val)
		case "responseType":
			c.enum(val, "json", "text", "auto")
		case "failOnStatus":
			c.boolean(val)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) stringMap(v any) {
	m, ok := c.object(v)
	if !ok {
		return
	}
	for k, val := range m {
		c.push(k)
		c.str(val)
		c.pop()
	}
}

// firstDuplicate finds the first item equal to an earlier one, as JSON
// values: (j, i) with i the smallest such index and j its first equal;
// i < 0 when all differ.
func firstDuplicate(a []any) (int, int) {
	if len(a) < 2 {
		return -1, -1
	}
	seen := make(map[string]int, len(a))
	var b strings.Builder
	for i, v := range a {
		b.Reset()
		if !canonical(&b, v) {
			continue // equal to nothing, as the validator finds
		}
		k := b.String()
		if j, ok := seen[k]; ok {
			return j, i
		}
		seen[k] = i
	}
	return -1, -1
}

// canonical writes a key equal for JSON-equal values: numbers by exact
// value, objects with sorted members. It is false for a value holding a
// number math/big cannot parse, which the validator finds equal to nothing.
func canonical(b *strings.Builder, v any) bool {
	switch v := v.(type) {
	case nil:
		b.WriteString("n")
	case bool:
		if v {
			b.WriteString("t")
		} else {
			b.WriteString("f")
		}
	case string:
		b.WriteString("s")
		b.WriteString(strconv.Quote(v))
	case []any:
		b.WriteString("[")
		for _, e := range v {
			if !canonical(b, e) {
				return false
			}
			b.WriteString(",")
		}
		b.WriteString("]")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString(strconv.Quote(k))
			b.WriteString(":")
			if !canonical(b, v[k]) {
				return false
			}
			b.WriteString(",")
		}
		b.WriteString("}")
	default:
		d, _, ok := jsonNumber(v)
		if !ok || d.huge {
			return false
		}
		b.WriteString("d")
		b.WriteString(d.String())
	}
	return true
}

// schemaQuote quotes s as the validator does in its messages.
func schemaQuote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

// schemaJoinQuoted quotes names as schemaQuote does, joined by ", ".
func schemaJoinQuoted(names []string) string {
	var b strings.Builder
	for i, s := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(schemaQuote(s))
	}
	return b.String()
}
