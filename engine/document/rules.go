package document

import (
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

func additionalMessage(names []string) string {
	return schemaSprintf("additional properties %s not allowed", schemaJoinQuoted(names))
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
