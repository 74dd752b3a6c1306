package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// The keywords of draft 2020-12 the runner accepts, by the shape of their
// value; const and default take any value. Other keywords are annotations
// (the draft ignores them), except those of earlier drafts that would
// silently change meaning, refused.
var (
	// A schema.
	schemaKeywords = []string{"additionalProperties", "propertyNames", "unevaluatedItems",
		"unevaluatedProperties", "items", "contains", "not", "if", "then", "else", "contentSchema"}
	// A non-empty array of schemas.
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	// An object whose members are schemas.
	schemaMapKeywords = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	// A non-negative integer.
	countKeywords = []string{"maxLength", "minLength", "maxItems", "minItems", "maxContains",
		"minContains", "maxProperties", "minProperties"}
	// A number.
	numberKeywords = []string{"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"}
	// A string.
	stringKeywords = []string{"title", "description", "$comment", "format", "contentEncoding", "contentMediaType"}
	// A boolean.
	boolKeywords = []string{"uniqueItems", "deprecated", "readOnly", "writeOnly"}
	// Keywords of other drafts, and what draft 2020-12 has instead.
	refusedKeywords = map[string]string{
		"additionalItems":  "a keyword of draft 2019-09 and earlier: use prefixItems with items",
		"dependencies":     "a keyword of draft-07 and earlier: use dependentRequired or dependentSchemas",
		"$recursiveRef":    "a keyword of draft 2019-09: use $dynamicRef",
		"$recursiveAnchor": "a keyword of draft 2019-09: use $dynamicAnchor",
		"$vocabulary":      "custom vocabularies are not supported: a schema is draft 2020-12",
	}
	// The keywords checked one by one in walk.
	otherKeywords = []string{"$schema", "$id", "$anchor", "$dynamicAnchor", "$ref", "$dynamicRef",
		"type", "enum", "examples", "required", "dependentRequired", "pattern", "multipleOf", "const", "default"}
	simpleTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}
	anchorName  = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)
)

// node is one subschema, found at a JSON pointer from the root.
type node struct {
	ptr  string   // the JSON pointer, escaped: "", "/properties/a"
	toks []string // its tokens, unescaped
	obj  map[string]any
	base *url.URL // the URI its relative references resolve against
	// inPlace are the subschemas applied to the same value: allOf and
	// the other applicators, and $ref and $dynamicRef targets.
	inPlace []int
	// dynamic are the schemas a $dynamicRef may apply (one of them).
	dynamic []int
	// props are the properties' subschemas (a member matches one);
	// prefix the prefixItems' (an item matches one); desc the other
	// subschemas applied to members or items.
	props, prefix, desc []int
	refs                []ref
	refTarget           int // the $ref's target, or -1
	// patternInsts and namePatternInsts are the estimated programs of
	// its pattern and of its patternProperties, for checkCost.
	patternInsts, namePatternInsts int
}

type ref struct {
	keyword, value string
}

// checker walks a schema: every keyword's value checked, every subschema
// indexed by pointer, $id and anchor.
type checker struct {
	nodes   []*node
	byPtr   map[string]int
	byURI   map[string]int // a resource's absolute URI, without fragment
	anchors map[string]int // resource URI + "#" + name
	dynamic bool
	dynAnch map[string][]int // $dynamicAnchor name: its schemas
	// order lists the nodes in-place targets first (see checkCost).
	order []int
	// checks and patternWork are what one part of a value, and one byte
	// of its text, may cost at each level (see checkCost).
	checks, patternWork []int
	// patternInsts is the estimated program size of the patterns so far.
	patternInsts int
	errs         Errors
}

// check runs every static check on raw and returns its index of subschemas.
func check(raw []byte) (*checker, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, Errors{{Msg: fmt.Sprintf("malformed JSON: %v", err)}}
	}
	c := &checker{byPtr: map[string]int{}, byURI: map[string]int{}, anchors: map[string]int{}, dynAnch: map[string][]int{}}
	base, _ := url.Parse(baseURI)
	c.walk(v, nil, base, 0)
	if len(c.errs) == 0 {
		c.resolveRefs()
	}
	if len(c.errs) == 0 {
		c.checkCycles()
	}
	if len(c.errs) == 0 {
		c.checkCost()
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return c, nil
}

const maxErrors = 20

// pattern checks a pattern or patternProperties name at toks: a regular
// expression whose program, with the others of the schema, stays within
// MaxPatternInsts. The size is estimated from the parse, before anything
// compiles it: a pattern of 22 KB compiled for 3 s into 158 MB, and the
// schema is compiled more than once. It returns the estimate.
func (c *checker) pattern(toks []string, p string) int {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		c.fail(toks, "not a regular expression: %v", err)
		return 0
	}
	insts := patternInsts(re)
	c.patternInsts += insts
	if c.patternInsts > MaxPatternInsts {
		c.fail(toks, "the schema's patterns would compile to more than %d instructions together, the most one schema may have (a repetition such as x{1000} counts x a thousand times)", MaxPatternInsts)
		return insts
	}
	if _, err := regexp.Compile(p); err != nil {
		c.fail(toks, "not a regular expression: %v", err)
	}
	return insts
}

// patternInsts estimates the instructions re compiles to: one for each
// operator and literal rune, a counted repetition what it repeats, times
// its count. It errs high.
func patternInsts(re *syntax.Regexp) int {
	const ceiling = 1 << 30
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		return min(times*(patternInsts(re.Sub[0])+1), ceiling)
	}
	n := 1
	for _, s := range re.Sub {
		n = min(n+patternInsts(s), ceiling)
	}
	return n
}

func (c *checker) fail(toks []string, format string, args ...any) {
	if len(c.errs) < maxErrors {
		c.errs = append(c.errs, &Error{Loc: slices.Clone(toks), Msg: fmt.Sprintf(format, args...)})
	}
}

var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// pointer is the JSON pointer of toks.
func pointer(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(pointerEscape.Replace(t))
	}
	return b.String()
}

// walk checks the schema v found at toks and indexes it and its
// subschemas; it returns v's node, or -1.
func (c *checker) walk(v any, toks []string, base *url.URL, nesting int) int {
	if len(c.errs) >= maxErrors {
		return -1
	}
	if nesting > MaxNesting {
		c.fail(toks, "subschemas nest more than %d deep", MaxNesting)
		return -1
	}
	n := &node{ptr: pointer(toks), toks: slices.Clone(toks), base: base, refTarget: -1}
	id := len(c.nodes)
	c.nodes = append(c.nodes, n)
	c.byPtr[n.ptr] = id
	if id == 0 {
		c.byURI[base.String()] = 0
	}
	switch v := v.(type) {
	case bool:
		return id
	case map[string]any:
		n.obj = v
	default:
		c.fail(toks, "a schema must be an object or a boolean, not %s", typeName(v))
		return id
	}
	obj := n.obj
	at := func(k string) []string { return append(slices.Clip(toks), k) }

	if s, ok := obj["$schema"]; ok {
		if str, _ := s.(string); str != Draft {
			c.fail(at("$schema"), "only draft 2020-12 (%q) is supported, not %s", Draft, describe(s))
		}
	}
	if s, ok := obj["$id"]; ok {
		str, ok := s.(string)
		u, err := url.Parse(str)
		switch {
		case !ok:
			c.fail(at("$id"), "must be a string")
		case err != nil:
			c.fail(at("$id"), "not a URI reference: %v", err)
		case u.Fragment != "" || strings.HasSuffix(str, "#") && str != "#":
			c.fail(at("$id"), "must not have a fragment: name a place with $anchor")
		default:
			r := base.ResolveReference(u)
			r.Fragment = ""
			key := r.String()
			if _, dup := c.byURI[key]; dup && id != 0 {
				c.fail(at("$id"), "%q names another subschema too", key)
			}
			c.byURI[key] = id
			n.base = r
			base = r
		}
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		s, ok := obj[k]
		if !ok {
			continue
		}
		name, _ := s.(string)
		if !anchorName.MatchString(name) {
			c.fail(at(k), "must be a name (a letter or _, then letters, digits, -, _ or .), not %s", describe(s))
			continue
		}
		key := base.String() + "#" + name
		if _, dup := c.anchors[key]; dup {
			c.fail(at(k), "anchor %q is defined twice in one resource", name)
		}
		c.anchors[key] = id
		if k == "$dynamicAnchor" {
			c.dynAnch[name] = append(c.dynAnch[name], id)
			c.dynamic = true
		}
	}
	for _, k := range []string{"$ref", "$dynamicRef"} {
		if s, ok := obj[k]; ok {
			str, ok := s.(string)
			if !ok {
				c.fail(at(k), "must be a string")
				continue
			}
			n.refs = append(n.refs, ref{k, str})
			if k == "$dynamicRef" {
				c.dynamic = true
			}
		}
	}

	for _, k := range sortedKeys(obj) {
		val := obj[k]
		kt := at(k)
		if kw, ok := caseVariant(k); ok {
			// The library decodes a schema as a Go struct, whose field
			// names match case-insensitively: "$Ref" would be its $ref.
			c.fail(kt, "%q is not a keyword (keywords are case-sensitive): did you mean %q?", k, kw)
			continue
		}
		switch {
		case refusedKeywords[k] != "":
			c.fail(kt, "%s", refusedKeywords[k])
		case slices.Contains(schemaKeywords, k):
			if k == "items" {
				if _, isArr := val.([]any); isArr {
					c.fail(kt, "an array of schemas is draft 2019-09's form: use prefixItems")
					continue
				}
			}
			sub := c.walk(val, kt, base, nesting+1)
			switch k {
			case "not", "if", "then", "else":
				n.inPlace = append(n.inPlace, sub)
			case "contentSchema":
				// An annotation: applied to nothing.
			default:
				n.desc = append(n.desc, sub)
			}
		case slices.Contains(schemaArrayKeywords, k):
			arr, ok := val.([]any)
			if !ok || len(arr) == 0 {
				c.fail(kt, "must be a non-empty array of schemas")
				continue
			}
			for i, e := range arr {
				sub := c.walk(e, append(slices.Clip(kt), fmt.Sprint(i)), base, nesting+1)
				if k == "prefixItems" {
					n.prefix = append(n.prefix, sub)
				} else {
					n.inPlace = append(n.inPlace, sub)
				}
			}
		case slices.Contains(schemaMapKeywords, k):
			m, ok := val.(map[string]any)
			if !ok {
				c.fail(kt, "must be an object whose members are schemas")
				continue
			}
			for _, name := range sortedKeys(m) {
				mt := append(slices.Clip(kt), name)
				if k == "patternProperties" {
					n.namePatternInsts += c.pattern(mt, name)
				}
				sub := c.walk(m[name], mt, base, nesting+1)
				switch k {
				case "properties":
					n.props = append(n.props, sub)
				case "patternProperties":
					n.desc = append(n.desc, sub)
				case "dependentSchemas":
					n.inPlace = append(n.inPlace, sub)
				}
			}
		case slices.Contains(countKeywords, k):
			if _, ok := count(val); !ok {
				c.fail(kt, "must be a non-negative integer up to %d, not %s", math.MaxInt32, describe(val))
			}
		case slices.Contains(numberKeywords, k):
			if _, ok := number(val); !ok {
				c.fail(kt, "must be a number, not %s", describe(val))
			}
		case k == "multipleOf":
			if f, ok := number(val); !ok || f <= 0 {
				c.fail(kt, "must be a number greater than 0, not %s", describe(val))
			}
		case slices.Contains(stringKeywords, k):
			if _, ok := val.(string); !ok {
				c.fail(kt, "must be a string, not %s", describe(val))
			}
		case slices.Contains(boolKeywords, k):
			if _, ok := val.(bool); !ok {
				c.fail(kt, "must be a boolean, not %s", describe(val))
			}
		case k == "type":
			c.checkType(kt, val)
		case k == "enum", k == "examples":
			if _, ok := val.([]any); !ok {
				c.fail(kt, "must be an array, not %s", describe(val))
			}
		case k == "required":
			c.checkNames(kt, val)
		case k == "dependentRequired":
			m, ok := val.(map[string]any)
			if !ok {
				c.fail(kt, "must be an object whose members are arrays of property names")
				continue
			}
			for _, name := range sortedKeys(m) {
				c.checkNames(append(slices.Clip(kt), name), m[name])
			}
		case k == "pattern":
			str, ok := val.(string)
			if !ok {
				c.fail(kt, "must be a string, not %s", describe(val))
			} else {
				n.patternInsts = c.pattern(kt, str)
			}
		}
	}
	return id
}

// keywords is every keyword walk knows.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range [][]string{schemaKeywords, schemaArrayKeywords, schemaMapKeywords, countKeywords,
		numberKeywords, stringKeywords, boolKeywords, otherKeywords} {
		for _, k := range list {
			m[k] = true
		}
	}
	for k := range refusedKeywords {
		m[k] = true
	}
	return m
}()

// caseVariant returns the keyword k spells in other case (or with
// characters Unicode folds alike), if k is not itself a keyword.
func caseVariant(k string) (string, bool) {
	if keywords[k] {
		return "", false
	}
	for kw := range keywords {
		if strings.EqualFold(k, kw) {
			return kw, true
		}
	}
	return "", false
}

func (c *checker) checkType(toks []string, v any) {
	switch v := v.(type) {
	case string:
		if !slices.Contains(simpleTypes, v) {
			c.fail(toks, "%q is not a type: want one of %s", v, strings.Join(simpleTypes, ", "))
		}
		return
	case []any:
		seen := map[string]bool{}
		for i, e := range v {
			s, ok := e.(string)
			if !ok || !slices.Contains(simpleTypes, s) {
				c.fail(append(slices.Clip(toks), fmt.Sprint(i)), "%s is not a type: want one of %s", describe(e), strings.Join(simpleTypes, ", "))
				continue
			}
			if seen[s] {
				c.fail(append(slices.Clip(toks), fmt.Sprint(i)), "%q is listed twice", s)
			}
			seen[s] = true
		}
		return
	}
	c.fail(toks, "must be a type name or an array of them, not %s", describe(v))
}

func (c *checker) checkNames(toks []string, v any) {
	arr, ok := v.([]any)
	if !ok {
		c.fail(toks, "must be an array of property names, not %s", describe(v))
		return
	}
	seen := map[string]bool{}
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			c.fail(append(slices.Clip(toks), fmt.Sprint(i)), "must be a property name (a string), not %s", describe(e))
			continue
		}
		if seen[s] {
			c.fail(append(slices.Clip(toks), fmt.Sprint(i)), "%q is listed twice", s)
		}
		seen[s] = true
	}
}

// count reads a non-negative integer, written as 2 or 2.0, that the
// library's int32 holds.
func count(v any) (int64, bool) {
	f, ok := number(v)
	if !ok || f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// typeName is the JSON type of a decoded value.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// describe shows a short value in a message, and the type of a long one.
func describe(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		return "an " + typeName(v)
	}
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return "a long " + typeName(v)
	}
	return string(b)
}
