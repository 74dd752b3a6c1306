package schema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The library validates from the root and stops at the first failure. To
// report every failing leaf, a failing value is split: its members and
// items are validated against the subschemas that apply to them, and the
// keywords of one subschema that assert on the value itself are validated
// as a schema of their own.
//
// A subschema is validated through a wrapper resolved once, on the first
// failure: the schema under $defs, and for every subschema an entry that
// refers to it by JSON pointer, nested by the hex digits of its index (so
// that reaching one entry costs a few lookups, not one per subschema).
// Validating {"0":{"1":v}} against the wrapper validates v against
// subschema 0x01 with the library's own semantics, references included.

const wrapperURI = "https://runner.invalid/details.schema.json"

// assertions are the keywords that judge a value by itself.
var assertions = []string{"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum",
	"minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
	"uniqueItems", "maxProperties", "minProperties"}

func (s *Schema) buildWrapper() error {
	var root jsonschema.Schema
	if err := json.Unmarshal(s.raw, &root); err != nil {
		return err
	}
	if root.ID == "" {
		root.ID = baseURI
	}
	rootURI := s.nodes[0].base
	s.width = len(strconv.FormatInt(int64(max(len(s.nodes)-1, 0)), 16))
	w := &jsonschema.Schema{Defs: map[string]*jsonschema.Schema{"r": &root}}
	for i, n := range s.nodes {
		at := w
		for _, d := range s.digits(i) {
			if at.Properties == nil {
				at.Properties = map[string]*jsonschema.Schema{}
			}
			next := at.Properties[d]
			if next == nil {
				next = &jsonschema.Schema{}
				at.Properties[d] = next
			}
			at = next
		}
		u := *rootURI
		u.Fragment = n.ptr
		at.Ref = u.String()
	}
	// The patternProperties, compiled once for every walk (a failing
	// object each walk visits would compile them again).
	s.patterns = map[string]*regexp.Regexp{}
	for _, n := range s.nodes {
		pp, _ := n.obj["patternProperties"].(map[string]any)
		for p := range pp {
			if _, ok := s.patterns[p]; !ok {
				s.patterns[p], _ = regexp.Compile(p)
			}
		}
	}
	rs, err := w.Resolve(&jsonschema.ResolveOptions{BaseURI: wrapperURI, Loader: noLoader})
	s.wrapper = rs
	return err
}

func (s *Schema) digits(i int) []string {
	h := fmt.Sprintf("%0*x", s.width, i)
	out := make([]string, len(h))
	for j := range h {
		out[j] = h[j : j+1]
	}
	return out
}

// check validates v against subschema i.
func (s *Schema) check(i int, v any) error {
	d := s.digits(i)
	for j := len(d) - 1; j >= 0; j-- {
		v = map[string]any{d[j]: v}
	}
	return s.wrapper.Validate(v)
}

// localCheck validates v against the assertions of subschema i alone.
func (s *Schema) localCheck(i int, v any) error {
	s.localOnce[i].Do(func() {
		obj := s.nodes[i].obj
		sub := map[string]any{}
		for _, k := range assertions {
			if e, ok := obj[k]; ok {
				sub[k] = e
			}
		}
		b, err := json.Marshal(sub)
		var js jsonschema.Schema
		if err == nil && json.Unmarshal(b, &js) == nil {
			s.local[i], _ = js.Resolve(nil)
		}
	})
	if s.local[i] == nil {
		return nil
	}
	return s.local[i].Validate(v)
}

type detailer struct {
	s      *Schema
	leaves []Leaf
	// spent is what the walk's checks have cost, by Validate's measure:
	// the walk validates members and items again at every level it
	// descends (a chain 100 deep, each level holding what one check
	// passes, took 27 s), so it is held to the bounds too.
	spent measure
}

// cutShort is what a walk panics with when its next check would pass the
// bounds; walk recovers it.
type cutShort struct{}

// walk reports the leaves of v, which fails the schema with rootErr,
// until they are maxLeaves or the next check would pass MaxChecks or
// MaxPatternWork; then a last leaf says the rest was not looked for.
func (d *detailer) walk(v any, rootErr error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(cutShort); !ok {
				panic(r)
			}
			d.leaves = append(d.leaves, Leaf{Msg: fmt.Sprintf("further failures were not looked for: finding them would make more than %d checks "+
				"(or %d pattern steps), the most one validation may", MaxChecks, MaxPatternWork)})
		}
	}()
	d.report(0, v, nil, rootErr)
}

// check is Schema.check, v depth levels deep, charged to the walk.
func (d *detailer) check(j int, v any, depth int) error {
	d.spent.walk(v, depth)
	d.cutIfOver()
	return d.s.check(j, v)
}

// localCheck is Schema.localCheck, charged to the walk: the assertions
// judge v alone, not its members or items.
func (d *detailer) localCheck(i int, v any, depth int) error {
	d.spent.checkWork += at(d.s.checks, depth)
	if str, ok := v.(string); ok {
		d.spent.patternWork += len(str) * at(d.s.patternWork, depth)
	}
	d.cutIfOver()
	return d.s.localCheck(i, v)
}

// cutIfOver cuts the walk short once what it spent is past the bounds.
func (d *detailer) cutIfOver() {
	if d.spent.over() {
		panic(cutShort{})
	}
}

func (s *Schema) details(v any, rootErr error) []Leaf {
	s.detailOnce.Do(func() {
		if !s.dynamic {
			s.detailErr = s.buildWrapper()
		}
	})
	if s.dynamic || s.detailErr != nil {
		return []Leaf{{Msg: "does not match the schema: " + keyword(rootErr)}}
	}
	d := &detailer{s: s, spent: measure{checks: s.checks, patterns: s.patternWork}}
	d.walk(v, rootErr)
	if len(d.leaves) == 0 {
		d.leaf(nil, nil, "does not match the schema: %s", keyword(rootErr))
	}
	return d.leaves
}

func (d *detailer) leaf(loc, members []string, format string, args ...any) {
	if len(d.leaves) < maxLeaves {
		d.leaves = append(d.leaves, Leaf{Loc: slices.Clone(loc), Msg: fmt.Sprintf(format, args...), Members: members})
	}
}

// missingLeaf is leaf for required members absent from m, an instance
// of obj: what m has that obj does not declare may be one misspelt.
func (d *detailer) missingLeaf(loc, missing []string, obj, m map[string]any, format string, args ...any) {
	if d.full() {
		return
	}
	d.leaf(loc, missing, format, args...)
	l := &d.leaves[len(d.leaves)-1]
	l.Missing = true
	l.Known = func() []string {
		props, _ := obj["properties"].(map[string]any)
		var undeclared []string
		for _, name := range sortedKeys(m) {
			if _, ok := props[name]; !ok {
				undeclared = append(undeclared, name)
			}
		}
		return undeclared
	}
}

// enumStrings lists the strings among an enum's values.
func enumStrings(enum any) []string {
	arr, _ := enum.([]any)
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// full reports whether the leaves reached maxLeaves: the rest is not
// looked for.
func (d *detailer) full() bool { return len(d.leaves) >= maxLeaves }

// sub returns the node at n's pointer extended by toks.
func (d *detailer) sub(n *node, toks ...string) (int, bool) {
	i, ok := d.s.byPtr[n.ptr+pointer(toks)]
	return i, ok
}

// report adds the leaves of v failing subschema i (err is that failure).
func (d *detailer) report(i int, v any, loc []string, err error) {
	if d.full() {
		return
	}
	n := d.s.nodes[i]
	before := len(d.leaves)
	if n.obj == nil {
		d.leaf(loc, nil, "no value is allowed here")
		return
	}
	obj := n.obj
	if e := d.localCheck(i, v, len(loc)); e != nil {
		kw, before := keyword(e), len(d.leaves)
		d.leaf(loc, nil, "%s", assertionMessage(kw, obj, v))
		if s, isStr := v.(string); isStr && kw == "enum" && len(d.leaves) > before {
			l := &d.leaves[len(d.leaves)-1]
			l.Got, l.Known = s, func() []string { return enumStrings(obj["enum"]) }
		}
	}
	// In place.
	apply := func(toks ...string) {
		if j, ok := d.sub(n, toks...); ok {
			if e := d.check(j, v, len(loc)); e != nil {
				d.report(j, v, loc, e)
			}
		}
	}
	if j := n.refTarget; j >= 0 {
		if onlyRef(obj) {
			// Nothing else here can fail: the target does (and a chain of
			// references is walked once, not once per link).
			d.report(j, v, loc, err)
			return
		}
		if e := d.check(j, v, len(loc)); e != nil {
			d.report(j, v, loc, e)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		arr, _ := obj[k].([]any)
		if arr == nil {
			continue
		}
		type failure struct {
			j   int
			err error
		}
		var failing []failure
		for x := range arr {
			j, _ := d.sub(n, k, strconv.Itoa(x))
			if err := d.check(j, v, len(loc)); err != nil {
				failing = append(failing, failure{j, err})
			}
		}
		switch {
		case k == "allOf" || len(failing) == len(arr):
			for _, f := range failing {
				d.report(f.j, v, loc, f.err)
			}
		case k == "oneOf" && len(arr)-len(failing) > 1:
			d.leaf(loc, nil, "valid against %d alternatives of oneOf, want exactly one", len(arr)-len(failing))
		}
	}
	if _, ok := obj["not"]; ok {
		if j, _ := d.sub(n, "not"); d.check(j, v, len(loc)) == nil {
			d.leaf(loc, nil, "must not be valid against not")
		}
	}
	if _, ok := obj["if"]; ok {
		j, _ := d.sub(n, "if")
		branch := "then"
		if d.check(j, v, len(loc)) != nil {
			branch = "else"
		}
		if _, ok := obj[branch]; ok {
			apply(branch)
		}
	}
	m, isObj := v.(map[string]any)
	if isObj {
		d.required(obj, m, loc)
		if ds, ok := obj["dependentSchemas"].(map[string]any); ok {
			for _, name := range sortedKeys(ds) {
				if _, present := m[name]; present {
					apply("dependentSchemas", name)
				}
			}
		}
		d.members(n, obj, m, loc)
	}
	if arr, ok := v.([]any); ok {
		d.items(n, obj, arr, loc)
	}
	if len(d.leaves) == before {
		// What failed is not split further (unevaluatedProperties, a
		// $dynamicRef, ...): one leaf here.
		kw := keyword(err)
		for _, k := range []string{"unevaluatedProperties", "unevaluatedItems", "$dynamicRef"} {
			if _, ok := obj[k]; ok {
				kw = k
				break
			}
		}
		d.leaf(loc, nil, "does not match the schema at #%s: %s", n.ptr, kw)
	}
}

func (d *detailer) required(obj, m map[string]any, loc []string) {
	if req, ok := obj["required"].([]any); ok {
		var missing []string
		for _, r := range req {
			name := r.(string)
			if _, present := m[name]; !present {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			d.missingLeaf(loc, missing, obj, m, "missing %s %s", plural(len(missing), "property", "properties"), quoted(missing))
		}
	}
	if dr, ok := obj["dependentRequired"].(map[string]any); ok {
		for _, name := range sortedKeys(dr) {
			if _, present := m[name]; !present {
				continue
			}
			var missing []string
			for _, r := range dr[name].([]any) {
				if _, present := m[r.(string)]; !present {
					missing = append(missing, r.(string))
				}
			}
			if len(missing) > 0 {
				d.missingLeaf(loc, missing, obj, m, "missing %s %s, required by '%s'", plural(len(missing), "property", "properties"), quoted(missing), name)
			}
		}
	}
}

func (d *detailer) members(n *node, obj, m map[string]any, loc []string) {
	props, _ := obj["properties"].(map[string]any)
	patterns, _ := obj["patternProperties"].(map[string]any)
	pats := sortedKeys(patterns)
	res := make([]*regexp.Regexp, len(pats))
	for i, p := range pats {
		res[i] = d.s.patterns[p]
	}
	nameWork := at(d.s.patternWork, len(loc)+1) // matching a member's name, a byte
	_, hasAdditional := obj["additionalProperties"]
	closed := obj["additionalProperties"] == false
	var extra []string
	for _, name := range sortedKeys(m) {
		if d.full() {
			return
		}
		at := append(slices.Clip(loc), name)
		try := func(toks ...string) {
			if j, ok := d.sub(n, toks...); ok {
				if e := d.check(j, m[name], len(at)); e != nil {
					d.report(j, m[name], at, e)
				}
			}
		}
		matched := false
		if _, ok := props[name]; ok {
			matched = true
			try("properties", name)
		}
		if len(pats) > 0 {
			d.spent.patternWork += len(name) * nameWork
			d.cutIfOver()
		}
		for i, p := range pats {
			if re := res[i]; re != nil && re.MatchString(name) {
				matched = true
				try("patternProperties", p)
			}
		}
		switch {
		case matched || !hasAdditional:
		case closed:
			extra = append(extra, name)
		default:
			try("additionalProperties")
		}
	}
	if len(extra) > 0 && !d.full() {
		d.leaf(loc, extra, "additional %s %s not allowed", plural(len(extra), "property", "properties"), quoted(extra))
		if len(props) > 0 {
			d.leaves[len(d.leaves)-1].Known = func() []string { return sortedKeys(props) }
		}
	}
	if _, ok := obj["propertyNames"]; ok {
		j, _ := d.sub(n, "propertyNames")
		for _, name := range sortedKeys(m) {
			if d.check(j, name, len(loc)+1) != nil {
				d.leaf(loc, nil, "property name %s is not allowed by propertyNames", short(name))
			}
		}
	}
}

func (d *detailer) items(n *node, obj map[string]any, arr []any, loc []string) {
	prefix, _ := obj["prefixItems"].([]any)
	_, hasItems := obj["items"]
	for x, e := range arr {
		if d.full() {
			return
		}
		var j int
		var ok bool
		switch {
		case x < len(prefix):
			j, ok = d.sub(n, "prefixItems", strconv.Itoa(x))
		case hasItems:
			j, ok = d.sub(n, "items")
		}
		if !ok {
			continue
		}
		if err := d.check(j, e, len(loc)+1); err != nil {
			d.report(j, e, append(slices.Clip(loc), strconv.Itoa(x)), err)
		}
	}
	if _, ok := obj["contains"]; ok {
		j, _ := d.sub(n, "contains")
		matched := 0
		for _, e := range arr {
			if d.check(j, e, len(loc)+1) == nil {
				matched++
			}
		}
		lo, hi := int64(1), int64(-1)
		if c, ok := count(obj["minContains"]); ok {
			lo = c
		}
		if c, ok := count(obj["maxContains"]); ok {
			hi = c
		}
		switch {
		case int64(matched) < lo:
			d.leaf(loc, nil, "%d items match contains, want at least %d", matched, lo)
		case hi >= 0 && int64(matched) > hi:
			d.leaf(loc, nil, "%d items match contains, want at most %d", matched, hi)
		}
	}
}

// onlyRef reports whether the $ref is all that obj applies to a value.
func onlyRef(obj map[string]any) bool {
	for k := range obj {
		switch k {
		case "$ref", "$defs", "definitions", "$id", "$anchor", "$schema", "$comment", "title", "description",
			"default", "examples", "deprecated", "readOnly", "writeOnly", "format", "contentEncoding",
			"contentMediaType", "contentSchema":
		default:
			return false
		}
	}
	return true
}

// keyword is the keyword the library names first in its innermost error
// ("type: …", "dependentRequired[…]: …"): what failed, without the value.
func keyword(err error) string {
	msg := innermost(err).Error()
	if i := strings.IndexAny(msg, ":[ "); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// assertionMessage says why v fails the assertion keyword kw of obj, in
// the words of the runner's other checks ("got string, want integer").
func assertionMessage(kw string, obj map[string]any, v any) string {
	want := obj[kw]
	switch kw {
	case "type":
		var names []string
		switch t := want.(type) {
		case string:
			names = []string{t}
		case []any:
			for _, e := range t {
				names = append(names, e.(string))
			}
		}
		return fmt.Sprintf("got %s, want %s", typeName(v), strings.Join(names, " or "))
	case "enum":
		arr, _ := want.([]any)
		var vals []string
		for x, e := range arr {
			if x == 10 {
				vals = append(vals, fmt.Sprintf("… (%d in all)", len(arr)))
				break
			}
			vals = append(vals, describe(e))
		}
		return "value must be one of " + strings.Join(vals, ", ")
	case "const":
		return "value must be " + describe(want)
	case "multipleOf":
		return fmt.Sprintf("got %s, want a multiple of %s", describe(v), describe(want))
	case "minimum", "maximum":
		return fmt.Sprintf("%s: got %s, want %s", kw, describe(v), describe(want))
	case "exclusiveMinimum":
		return fmt.Sprintf("%s: got %s, want more than %s", kw, describe(v), describe(want))
	case "exclusiveMaximum":
		return fmt.Sprintf("%s: got %s, want less than %s", kw, describe(v), describe(want))
	case "minLength", "maxLength":
		str, _ := v.(string)
		return fmt.Sprintf("%s: got %d, want %s", kw, len([]rune(str)), describe(want))
	case "minItems", "maxItems":
		arr, _ := v.([]any)
		return fmt.Sprintf("%s: got %d, want %s", kw, len(arr), describe(want))
	case "minProperties", "maxProperties":
		m, _ := v.(map[string]any)
		return fmt.Sprintf("%s: got %d, want %s", kw, len(m), describe(want))
	case "pattern":
		str, _ := v.(string)
		return fmt.Sprintf("%s does not match pattern %s", short(str), short(fmt.Sprint(want)))
	case "uniqueItems":
		return "items must be unique"
	}
	return "fails " + kw
}

// short quotes s, cut to 40 characters.
func short(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return "'" + s + "'"
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = short(n)
	}
	return strings.Join(q, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
