package document

import "strconv"

// A node type's with is described once, by a With: the check of a with
// (here) and its definition in docs/workflow.schema.json (internal/schemagen)
// both come from it. The document knows no node type: the engine hands
// Parse and Check the With of each type it runs. The rest of the document
// is described by the same types, once too (Workflow, spec.go).

// With describes a node type's with object.
type With struct {
	// Required is whether a node of the type must have a with.
	Required bool
	// Doc is a one-line description of the with.
	Doc string
	// Fields are its members; no other member is allowed.
	Fields []Field
}

// Field is one member of an object: of the document, a node, a with, or an
// object inside one.
type Field struct {
	Name string
	Type Type
	// Required is whether the member must be there.
	Required bool
	// Literal is set when the member is taken as written: no ${{ }} in it
	// is evaluated.
	Literal bool
	// Secrets is set when a secret's value may flow into the member.
	Secrets bool
	// Default is the value an absent member stands for, as JSON text
	// ("" when there is none).
	Default string
	// Doc is a one-line description of the member.
	Doc string
}

// Kind is the JSON type a value must have.
type Kind uint8

// The kinds of a value.
const (
	Any          Kind = iota // any JSON value
	String                   // a string, MinLength and Pattern apply
	Integer                  // an integer of at least Minimum (and at most Maximum)
	Number                   // any number (of at least Minimum when Bounded)
	Boolean                  // true or false
	Object                   // an object: its Fields, or each value of type Values
	ObjectOrBool             // an object or a boolean (a JSON Schema)
	Array                    // an array of Items
	Enum                     // one of the strings Enum
	Nodes                    // an array of at least one node (a sub-graph)
	Const                    // the number Value
	OneNode                  // a node: an object of Fields, its with held to its type's With too
)

// Type is what a value may be.
type Type struct {
	Kind      Kind
	MinLength int                 // String: 0 or 1
	Minimum   int                 // Integer, and Number when Bounded: the least it may be
	Maximum   int                 // Integer: the most it may be; 0 when there is no most
	Bounded   bool                // Number: Minimum applies
	Value     int                 // Const: the number it must be
	Pattern   string              // String: the pattern it must match, as the schema writes it
	Match     func(s string) bool // String: Pattern, in Go
	Enum      []string            // Enum
	Items     *Type               // Array: the type of every item (nil: any)
	Unique    bool                // Array: no two items are equal
	Fields    []Field             // Object, OneNode: its members, when it declares them
	Values    *Type               // Object: the type of every member's value (a map)
	// Template allows a string holding a ${{ }} template instead;
	// TemplateFirst tries the template first, whose failure is then the
	// one reported when neither fits.
	Template, TemplateFirst bool
	// Def names the type in the schema's $defs, where it is written once
	// and referred to ("intOrTemplate"); "" writes it in place.
	Def string
}

// Withs are the With of each node type, by type.
type Withs map[string]*With

// Member types that many withs share.
var (
	AnyValue         = Type{Kind: Any}
	Text             = Type{Kind: String}
	Name             = Type{Kind: String, MinLength: 1} // a non-empty string
	Names            = Type{Kind: Array, Items: &Name}
	IntOrTemplate    = Type{Kind: Integer, Template: true, Def: "intOrTemplate"}
	NumberOrTemplate = Type{Kind: Number, Template: true, Def: "numberOrTemplate"}
	ObjectOrTemplate = Type{Kind: Object, Template: true}
)

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
