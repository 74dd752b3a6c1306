package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
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
//
// The whole walk is in this file, every rule on a value with it (the
// spec's types are in with.go and spec.go, the check's state in rules.go,
// exact numbers in numbers.go): a check bouncing between files for each
// member read as a walk of 54 stops through Prepare, this one as 20.

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
// check walks their spec (spec.go) as a with's does (With, with.go), taking
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

// with checks a node's with against w.
func (c *docChecker) with(w *With, v any) {
	c.fields(v, w.Fields)
}

// fields checks an object decoded generically that declares its members.
func (c *docChecker) fields(v any, fields []Field) {
	if m, ok := c.object(v); ok {
		c.required(fields, m)
		c.rest(fields, m)
	}
}

// required reports the required fields an object lacks. Nothing is
// allocated unless one is missing.
func (c *docChecker) required(fields []Field, m map[string]any) {
	var missing []string
	for i := range fields {
		if !fields[i].Required {
			continue
		}
		if _, ok := m[fields[i].Name]; !ok {
			missing = append(missing, fields[i].Name)
		}
	}
	if missing != nil {
		c.missing(missing)
	}
}

// rest checks the members of m against fields: each has its type, and
// none is another.
func (c *docChecker) rest(fields []Field, m map[string]any) {
	if len(m) == 0 {
		return // most nodes keep nothing as decoded
	}
	var extra []string
	for k, val := range m {
		c.push(k)
		if f := field(fields, k); f != nil {
			c.value(&f.Type, val)
		} else {
			extra = append(extra, k)
		}
		c.pop()
	}
	if len(extra) > 0 {
		c.additional(extra, fields)
	}
}

// field returns the field named k, or nil.
func field(fields []Field, k string) *Field {
	for i := range fields {
		if fields[i].Name == k {
			return &fields[i]
		}
	}
	return nil
}

// value checks v against t.
func (c *docChecker) value(t *Type, v any) {
	switch {
	case !t.Template:
		c.plain(t, v)
	case t.TemplateFirst:
		c.anyOf(v, &templateText, t)
	default:
		c.anyOf(v, t, &templateText)
	}
}

// anyOf passes when v is of type a or of type b, each taken without its
// template alternative; otherwise both fail as the validator reports
// them, a's first.
func (c *docChecker) anyOf(v any, a, b *Type) {
	c.quiet++
	for _, t := range [2]*Type{a, b} {
		before := c.fails
		c.plain(t, v)
		if c.fails == before {
			c.quiet--
			return
		}
	}
	c.quiet--
	if c.quiet > 0 {
		return // the enclosing anyOf has counted the failure
	}
	c.plain(a, v)
	c.plain(b, v)
}

// plain checks v against t, its template alternative aside.
func (c *docChecker) plain(t *Type, v any) {
	switch t.Kind {
	case Any:
	case String:
		if s, ok := c.str(v); ok {
			c.text(t, s)
		}
	case Integer:
		c.integer(v, t)
	case Number:
		c.number(v, t)
	case Const:
		if d, _, ok := jsonNumber(v); !ok || d.huge || d.cmp(intDecimal(t.Value)) != 0 {
			c.fail("value must be %s", strconv.Itoa(t.Value))
		}
	case Boolean:
		c.boolean(v)
	case Object:
		switch {
		case t.Fields != nil:
			c.fields(v, t.Fields)
		case t.Values != nil:
			if m, ok := c.object(v); ok {
				for k, val := range m {
					c.push(k)
					c.value(t.Values, val)
					c.pop()
				}
			}
		default:
			c.object(v)
		}
	case ObjectOrBool:
		c.objectOrBool(v)
	case Array:
		a, ok := c.array(v)
		if !ok {
			break
		}
		if t.Unique {
			if j, i := firstDuplicate(a); i >= 0 {
				c.fail("items at %d and %d are equal", j, i)
			}
		}
		if t.Items != nil {
			for i, e := range a {
				c.pushIdx(i)
				c.value(t.Items, e)
				c.pop()
			}
		}
	case Enum:
		c.enum(v, t.Enum...)
	case Nodes:
		c.nodes(v, true)
	case OneNode:
		n := nodeFromValue(v)
		c.node(&n)
	}
}

// text checks a string against t: a String's rules, or, for a member the
// decode held as a string that t says is something else, t's.
func (c *docChecker) text(t *Type, s string) {
	if t.Kind != String || t.Template {
		c.value(t, s)
		return
	}
	if t.MinLength > 0 {
		c.min1(s)
	}
	if t.Pattern != "" && !t.Match(s) {
		c.pattern(s, t.Pattern, false)
	}
}

// texts is value for an array the decode held as strings (a node's needs).
func (c *docChecker) texts(t *Type, a []string) {
	if t.Kind != Array || t.Template {
		v := make([]any, len(a))
		for i, s := range a {
			v[i] = s
		}
		c.value(t, v)
		return
	}
	if t.Unique {
		if j, i := firstDuplicateString(a); i >= 0 {
			c.fail("items at %d and %d are equal", j, i)
		}
	}
	if t.Items != nil {
		for i, s := range a {
			c.pushIdx(i)
			c.text(t.Items, s)
			c.pop()
		}
	}
}

func (c *docChecker) failMembers(msg string, members []string) {
	if c.quiet > 0 {
		c.fails++
		return
	}
	c.leaves = append(c.leaves, schemaLeaf{loc: c.loc(), msg: msg, members: members})
}

// missing reports required members that are absent.
func (c *docChecker) missing(missing []string) {
	switch len(missing) {
	case 0:
		return
	case 1:
		c.failMembers(schemaSprintf("missing property %s", schemaQuote(missing[0])), missing)
	default:
		c.failMembers(schemaSprintf("missing properties %s", schemaJoinQuoted(missing)), missing)
	}
	if c.quiet == 0 {
		c.leaves[len(c.leaves)-1].missing = true
	}
}

// additional reports the members of an object that none of its fields
// names.
func (c *docChecker) additional(extra []string, fields []Field) {
	if len(extra) == 0 {
		return
	}
	slices.Sort(extra)
	c.failMembers(additionalMessage(extra), extra)
	if c.quiet == 0 {
		c.leaves[len(c.leaves)-1].near = c.nearMisses(extra, fields)
	}
}

// nearMisses pairs each of extra with the field it is a plausible typo
// of; only on the way to a 400. The fields' names are offered in order,
// the first of equally near ones being the one suggested.
func (c *docChecker) nearMisses(extra []string, fields []Field) []nearMiss {
	if !c.nearPlace() {
		return nil
	}
	known := make([]string, len(fields))
	for i := range fields {
		known[i] = fields[i].Name
	}
	slices.Sort(known)
	var near []nearMiss
	for _, k := range extra[:min(len(extra), maxNearMissMembers)] {
		if want := lang.Closest(k, known); want != "" {
			near = append(near, nearMiss{got: k, want: want})
		}
	}
	return near
}

// nearPlace takes one of the places the near-miss search may look at,
// reporting false when none is left.
func (c *docChecker) nearPlace() bool {
	if c.nearPlaces >= maxNearMissPlaces {
		return false
	}
	c.nearPlaces++
	return true
}

func additionalMessage(names []string) string {
	return schemaSprintf("additional properties %s not allowed", schemaJoinQuoted(names))
}

// integer checks an integer against t's Minimum and Maximum.
func (c *docChecker) integer(v any, t *Type) {
	d, text, ok := jsonNumber(v)
	if !ok || !d.isInt() {
		c.typeErr(v, "integer")
		return
	}
	c.atLeast(d, text, t.Minimum)
	if t.Maximum != 0 && d.cmp(intDecimal(t.Maximum)) > 0 {
		c.fail("maximum: got %v, want %v", decFloat(text), float64(t.Maximum))
	}
}

// number checks a number against t's Minimum, when Bounded.
func (c *docChecker) number(v any, t *Type) {
	d, text, ok := jsonNumber(v)
	if !ok {
		c.typeErr(v, "number")
		return
	}
	if t.Bounded {
		c.atLeast(d, text, t.Minimum)
	}
}

func (c *docChecker) atLeast(d decimal, text string, min int) {
	if d.cmp(intDecimal(min)) < 0 {
		c.fail("minimum: got %v, want %v", decFloat(text), float64(min))
	}
}

// intDecimal is n as a decimal; the bounds of the spec are small.
func intDecimal(n int) decimal {
	switch n {
	case 0:
		return decimal{}
	case 1:
		return decimal{digits: "1"}
	case 10:
		return decimal{digits: "1", exp: 1}
	}
	d, _ := parseDecimal(strconv.Itoa(n))
	return d
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
	// A misspelt value ("continu") gets its "did you mean", as a misspelt
	// member does, within the same bound on places.
	if ok && c.quiet == 0 && c.nearPlace() {
		if want := lang.Closest(s, values); want != "" {
			l := &c.leaves[len(c.leaves)-1]
			l.near = []nearMiss{{got: s, want: want}}
		}
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

func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return decimal{}, false
	}
	exp := 0
	if hasExp {
		neg := false
		switch {
		case strings.HasPrefix(expText, "+"):
			expText = expText[1:]
		case strings.HasPrefix(expText, "-"):
			neg, expText = true, expText[1:]
		}
		if expText == "" || !allDigits(expText) {
			return decimal{}, false
		}
		for _, c := range expText {
			if exp < maxDecimalExp {
				exp = exp*10 + int(c-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	digits := intPart + frac
	exp -= len(frac)
	d.huge = exp > 1e6 || exp < -1e6
	digits = strings.TrimLeft(digits, "0")
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return decimal{huge: d.huge}, true
	}
	d.digits, d.exp = digits, exp
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cmp compares d and o: -1, 0 or +1.
func (d decimal) cmp(o decimal) int {
	switch {
	case d.digits == "" && o.digits == "":
		return 0
	case d.digits == "":
		if o.neg {
			return 1
		}
		return -1
	case o.digits == "":
		if d.neg {
			return -1
		}
		return 1
	case d.neg != o.neg:
		if d.neg {
			return -1
		}
		return 1
	}
	c := d.cmpAbs(o)
	if d.neg {
		return -c
	}
	return c
}

func (d decimal) cmpAbs(o decimal) int {
	// Magnitudes: the position of the leading digit.
	dm, om := len(d.digits)+d.exp, len(o.digits)+o.exp
	if dm != om {
		if dm < om {
			return -1
		}
		return 1
	}
	return strings.Compare(d.digits, o.digits)
}

func (d decimal) isInt() bool { return !d.huge && (d.digits == "" || d.exp >= 0) }

// jsonNumber reports v's exact value when it is a JSON number.
func jsonNumber(v any) (decimal, string, bool) {
	switch n := v.(type) {
	case json.Number:
		d, ok := parseDecimal(string(n))
		return d, string(n), ok
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return decimal{}, "", false
		}
		s := strconv.FormatFloat(n, 'g', -1, 64)
		d, ok := parseDecimal(s)
		return d, s, ok
	}
	return decimal{}, "", false
}

// millis converts an integer JSON number to an int64 count of milliseconds,
// clamped to what a time.Duration holds. ok is false when v is not an
// integer.
func millis(v any) (int64, bool) {
	d, _, ok := jsonNumber(v)
	if !ok || !d.isInt() {
		return 0, false
	}
	if d.digits == "" {
		return 0, true
	}
	if len(d.digits)+d.exp > 19 {
		if d.neg {
			return -maxMillis, true
		}
		return maxMillis, true
	}
	n, err := strconv.ParseInt(d.digits+strings.Repeat("0", d.exp), 10, 64)
	if err != nil || n > maxMillis {
		n = maxMillis
	}
	if d.neg {
		n = -n
	}
	return n, true
}
