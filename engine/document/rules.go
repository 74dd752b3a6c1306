package document

import (
	"slices"
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
)

// The primitives of the check (check.go): locations, failures
// worded as the JSON Schema validator words them, and the rules on values.

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

// Bounds of the near-miss search, which runs only on the way to a 400,
// but over a document an author wrote: the unknown members of one object
// looked at, and the objects looked at in a document.
const (
	maxNearMissMembers = 8
	maxNearMissPlaces  = 64
)

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
