package document

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
)

// The primitives of the check (check.go): locations, failures
// worded as the JSON Schema validator words them, and the rules on values.

// Patterns of the schema, as the validator quotes them in messages.
const (
	idPattern       = `^[A-Za-z_][A-Za-z0-9_-]*$`
	templatePattern = `\$\{\{`
)

// schemaLeaf is one failed rule: where, what, and the members a missing or
// unknown member rule names (reported at the object, covering the member).
// The document's check also says which members were missing, and which
// unknown ones are near misses of known ones: reportLeaves words them
// into a "did you mean" after the validator's message.
type schemaLeaf struct {
	loc     string
	msg     string
	members []string
	missing bool       // members are required ones absent
	near    []nearMiss // for unknown members
}

// nearMiss is an unknown member and the known one it is a plausible typo
// of.
type nearMiss struct{ got, want string }

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
	withs  Withs // each node type's with
	stack  []docSeg
	leaves []schemaLeaf
	quiet  int
	fails  int
	// nearPlaces counts the objects nearMisses looked at.
	nearPlaces int
}

// checkDocumentSchema checks a decoded document and returns what failed,
// located under base ("workflow").
func checkDocumentSchema(base string, doc *Document, withs Withs) []schemaLeaf {
	c := &docChecker{base: base, withs: withs, stack: make([]docSeg, 0, 16)}
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
	c.leaves = append(c.leaves, schemaLeaf{loc: c.loc(), msg: schemaSprintf(format, args...)})
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

// additional reports members no rule names; check is the object's rule on
// a member, which knows the names that would have been accepted.
func (c *docChecker) additional(extra []string, check func(c *docChecker, k string, val any) bool) {
	if len(extra) == 0 {
		return
	}
	slices.Sort(extra)
	c.failMembers(additionalMessage(extra), extra)
	if c.quiet == 0 {
		c.leaves[len(c.leaves)-1].near = c.nearMisses(extra, check)
	}
}

// nearMisses pairs each of extra with the member check accepts that it is
// a plausible typo of. The names check accepts are found by asking it of
// each member name the schema has (memberNames), quietly: only on the way
// to a 400.
func (c *docChecker) nearMisses(extra []string, check func(c *docChecker, k string, val any) bool) []nearMiss {
	if !c.nearPlace() {
		return nil
	}
	var known []string
	c.quiet++
	fails := c.fails
	for _, k := range memberNames {
		c.push(k)
		if check(c, k, nil) {
			known = append(known, k)
		}
		c.pop()
	}
	c.fails = fails
	c.quiet--
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

// Bounds of the near-miss search, which runs only on the way to a 400,
// but over a document an author wrote: the unknown members of one object
// looked at, and the objects looked at in a document.
const (
	maxNearMissMembers = 8
	maxNearMissPlaces  = 64
)

// memberNames are the names of every member the workflow schema
// (docs/workflow.schema.json) defines, at any depth.
var memberNames = []string{
	"$schema", "arguments", "backoffMs", "batchSize", "body", "code", "concurrency",
	"content", "description", "distribute", "factor", "failOnStatus", "headers", "id",
	"input", "invocations", "items", "json", "maxAttempts", "maxBackoffMs", "maxSteps",
	"maxTokens", "message", "messages", "method", "name", "needs", "nodes", "onError",
	"output", "prompt", "query", "responseType", "retry", "role", "system", "temperature",
	"timeoutMs", "tool", "tools", "toolset", "toolsets", "type", "url", "value", "version",
	"when", "with", "workflow",
}

// nearHint words near misses for a detail: ` (did you mean "with"?)` for
// the one unknown member of an additional-properties detail, else each
// with the member it stands for.
func nearHint(near []nearMiss, alone bool) string {
	if len(near) == 0 {
		return ""
	}
	if alone && len(near) == 1 {
		return fmt.Sprintf(" (did you mean %q?)", near[0].want)
	}
	var b strings.Builder
	b.WriteString(" (did you mean ")
	for i, n := range near {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q for %q", n.want, n.got)
	}
	b.WriteString("?)")
	return b.String()
}

func additionalMessage(names []string) string {
	return schemaSprintf("additional properties %s not allowed", schemaJoinQuoted(names))
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
