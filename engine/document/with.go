package document

// A node type's with is described once, by a With: the check of a with
// (check.go) and its definition in docs/workflow.schema.json (internal/schemagen)
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
