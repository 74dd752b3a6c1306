package document

import (
	"strconv"
	"strings"
)

// A node type's with is described once, by a With: the check of a with
// (here) and its definition in docs/workflow.schema.json (internal/schemagen)
// both come from it. The document knows no node type: the engine hands
// Parse and Check the With of each type it runs.

// With describes a node type's with object.
type With struct {
	// Required is whether a node of the type must have a with.
	Required bool
	// Doc is a one-line description of the with.
	Doc string
	// Fields are its members; no other member is allowed.
	Fields []Field
}

// Field is one member of a with, or of an object inside it.
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
	Integer                  // an integer of at least Minimum
	Number                   // any number
	Boolean                  // true or false
	Object                   // an object: its Fields, or each value of type Values
	ObjectOrBool             // an object or a boolean (a JSON Schema)
	Array                    // an array of Items
	Enum                     // one of the strings Enum
	Nodes                    // an array of at least one node (a sub-graph)
)

// Type is what a value may be.
type Type struct {
	Kind      Kind
	MinLength int                 // String: 0 or 1
	Minimum   int                 // Integer: 0 or 1
	Pattern   string              // String: the pattern it must match, as the schema writes it
	Match     func(s string) bool // String: Pattern, in Go
	Enum      []string            // Enum
	Items     *Type               // Array: the type of every item (nil: any)
	Fields    []Field             // Object: its members, when it declares them
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
	ObjectOrTemplate = Type{Kind: Object, Template: true}
)

// with checks a node's with against w.
func (c *docChecker) with(w *With, v any) {
	c.fields(v, w.Fields)
}

// fields checks an object that declares its members: the required ones
// are there, each member has its type, and no other member is. Nothing is
// allocated unless something fails.
func (c *docChecker) fields(v any, fields []Field) {
	m, ok := c.object(v)
	if !ok {
		return
	}
	var missing []string
	for i := range fields {
		if fields[i].Required {
			if _, ok := m[fields[i].Name]; !ok {
				missing = append(missing, fields[i].Name)
			}
		}
	}
	c.missing(missing)
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
		c.additional(extra, func(_ *docChecker, k string, _ any) bool { return field(fields, k) != nil })
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
		c.anyOf(v, (*docChecker).template, func(c *docChecker, v any) { c.plain(t, v) })
	default:
		c.anyOf(v, func(c *docChecker, v any) { c.plain(t, v) }, (*docChecker).template)
	}
}

// plain checks v against t, its template alternative aside.
func (c *docChecker) plain(t *Type, v any) {
	switch t.Kind {
	case Any:
	case String:
		s, ok := c.str(v)
		if ok && t.MinLength > 0 {
			c.min1(s)
		}
		if ok && t.Pattern != "" {
			c.pattern(s, t.Pattern, t.Match(s))
		}
	case Integer:
		c.integer(v, minimum(t.Minimum), nil)
	case Number:
		c.number(v, nil)
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
		if a, ok := c.array(v); ok && t.Items != nil {
			c.items(a, func(c *docChecker, v any) { c.value(t.Items, v) })
		}
	case Enum:
		c.enum(v, t.Enum...)
	case Nodes:
		c.nodes(v, true)
	}
}

func minimum(n int) decimal {
	switch n {
	case 0:
		return decZero
	case 1:
		return decOne
	}
	d, _ := parseDecimal(strconv.Itoa(n))
	return d
}

func (c *docChecker) template(v any) {
	if s, ok := c.str(v); ok {
		c.pattern(s, templatePattern, strings.Contains(s, "${{"))
	}
}
