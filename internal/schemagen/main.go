// Command schemagen writes docs/workflow.schema.json, all of it, from the
// specs the document is checked by: the document's own (document.Workflow:
// its members, a node's, retry's and the named types they share) and the
// with of each node type an engine registers (Engine.WithSpecs: engine/nodes
// and the engine's own map and workflow), in the order of their names: the
// node schema's if/then rows, which pick each type's with and say whether
// it is required, and the with.* definitions. Run by go generate in docs/;
// TestSchemaIsGenerated fails when the checked-in schema is not what it
// writes.
//
// docs/execution.schema.json is written by hand: it holds no rule of the
// workflow document, to which it refers by $ref (TestExecutionSchemaRefersToWorkflow).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	_ "github.com/runnerd/lambda-runner/engine/nodes"
)

func main() {
	log.SetFlags(0)
	const file = "workflow.schema.json" // go generate runs in docs/
	out, err := generate(&document.Workflow, specs())
	if err != nil {
		log.Fatalf("%s: %v", file, err)
	}
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(out, old) {
		return
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		log.Fatal(err)
	}
}

// specs returns the with of every built-in node type.
func specs() document.Withs { return engine.New(engine.Limits{}).WithSpecs() }

// generate returns the JSON Schema of s, its nodes' withs being withs.
func generate(s *document.Schema, withs document.Withs) ([]byte, error) {
	g := &gen{withs: withs, kinds: slices.Sorted(maps.Keys(withs)), defs: map[string]string{}, refs: map[string]bool{}}
	for _, kind := range g.kinds {
		if withs[kind] == nil {
			return nil, fmt.Errorf("no with for %q", kind)
		}
	}
	var defs block
	for _, t := range s.Defs {
		if t.Def == "" {
			return nil, fmt.Errorf("a definition without a name (%v)", t.Kind)
		}
		defs = g.define(defs, t)
	}
	// Each with's named types, each once, before the first with using it.
	for _, kind := range g.kinds {
		for _, t := range named(withs[kind].Fields, nil) {
			defs = g.define(defs, t)
		}
		defs = g.add(defs, "with."+kind, g.object(&document.Type{Kind: document.Object, Fields: withs[kind].Fields}, true))
	}
	root := block{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", s.ID},
		{"title", s.Title},
		{"description", s.Doc},
	}
	root = append(root, g.object(&document.Type{Kind: document.Object, Fields: s.Fields}, true)...)
	root = append(root, kv{"$defs", defs})
	if g.err != nil {
		return nil, g.err
	}
	for _, ref := range slices.Sorted(maps.Keys(g.refs)) {
		if _, ok := g.defs[ref]; !ok {
			return nil, fmt.Errorf("#/$defs/%s is referred to, not defined", ref)
		}
	}
	var b strings.Builder
	write(&b, root, "")
	b.WriteByte('\n')
	return []byte(b.String()), nil
}

// gen is one generation: the definitions written, by name (as their
// text, to catch two types of one name), and those referred to.
type gen struct {
	withs document.Withs
	kinds []string
	defs  map[string]string
	refs  map[string]bool
	err   error
}

// define appends t's definition to defs, unless one of its name is there
// already, which must then be the same.
func (g *gen) define(defs block, t *document.Type) block {
	var body any
	if (t.Kind == document.Object || t.Kind == document.OneNode) && t.Fields != nil && !t.Template {
		body = g.object(t, true)
	} else {
		body = g.typeSchema(t, false)
	}
	return g.add(defs, t.Def, body)
}

// add appends the definition of name, body, to defs, unless name is
// defined already, which must then be the same.
func (g *gen) add(defs block, name string, body any) block {
	var text strings.Builder
	write(&text, body, "")
	if old, ok := g.defs[name]; ok {
		if old != text.String() && g.err == nil {
			g.err = fmt.Errorf("two types are named %q: %s and %s", name, old, text.String())
		}
		return defs
	}
	g.defs[name] = text.String()
	return append(defs, kv{name, body})
}

// named lists the named types under fields, in the order met, each once.
func named(fields []document.Field, seen []*document.Type) []*document.Type {
	var walk func(t *document.Type)
	walk = func(t *document.Type) {
		if t == nil {
			return
		}
		if t.Def != "" {
			if slices.ContainsFunc(seen, func(s *document.Type) bool { return s.Def == t.Def }) {
				return
			}
			seen = append(seen, t)
		}
		walk(t.Items)
		walk(t.Values)
		for i := range t.Fields {
			walk(&t.Fields[i].Type)
		}
	}
	for i := range fields {
		walk(&fields[i].Type)
	}
	return seen
}

// object is the members of an object type's schema (a Node's with its
// if/then rows), its properties one a line when lines.
func (g *gen) object(t *document.Type, lines bool) block {
	o := block{{"type", "object"}}
	if req := required(t.Fields); req != nil {
		o = append(o, kv{"required", req})
	}
	props := block{}
	for i := range t.Fields {
		props = append(props, kv{t.Fields[i].Name, g.fieldSchema(&t.Fields[i])})
	}
	if lines {
		o = append(o, kv{"properties", props})
	} else {
		o = append(o, kv{"properties", obj(props)})
	}
	o = append(o, kv{"additionalProperties", false})
	if t.Kind == document.OneNode {
		if lines {
			o = append(o, kv{"allOf", list(g.rows())})
		} else {
			o = append(o, kv{"allOf", g.rows()})
		}
	}
	return o
}

// rows are the node schema's if/then rows: a node of each type has its
// type's with, and has one when it is required.
func (g *gen) rows() []any {
	var rows []any
	for _, kind := range g.kinds {
		w := g.withs[kind]
		then := obj{}
		if w.Required {
			then = append(then, kv{"required", []any{"with"}})
		}
		then = append(then, kv{"properties", obj{{"with", g.ref("with." + kind)}}})
		rows = append(rows, obj{
			{"if", obj{{"required", []any{"type"}}, {"properties", obj{{"type", obj{{"const", kind}}}}}}},
			{"then", then},
		})
	}
	return rows
}

func (g *gen) ref(name string) obj {
	g.refs[name] = true
	return obj{{"$ref", "#/$defs/" + name}}
}

func required(fields []document.Field) []any {
	var req []any
	for _, f := range fields {
		if f.Required {
			req = append(req, f.Name)
		}
	}
	return req
}

// fieldSchema is a member's schema: its type's, its default and its doc.
func (g *gen) fieldSchema(f *document.Field) obj {
	o := g.typeSchema(&f.Type, true)
	if f.Default != "" {
		o = append(o, kv{"default", raw(f.Default)})
	}
	if f.Doc != "" {
		o = append(o, kv{"description", f.Doc})
	}
	return o
}

// typeSchema is t's schema on one line; ref refers to a named type rather
// than writing it.
func (g *gen) typeSchema(t *document.Type, ref bool) obj {
	if ref && t.Def != "" {
		return g.ref(t.Def)
	}
	var o obj
	switch t.Kind {
	case document.Any:
	case document.String:
		o = obj{{"type", "string"}}
		if t.MinLength > 0 {
			o = append(o, kv{"minLength", t.MinLength})
		}
		if t.Pattern != "" {
			o = append(o, kv{"pattern", t.Pattern})
		}
	case document.Integer:
		o = obj{{"type", "integer"}, {"minimum", t.Minimum}}
		if t.Maximum != 0 {
			o = append(o, kv{"maximum", t.Maximum})
		}
	case document.Number:
		o = obj{{"type", "number"}}
		if t.Bounded {
			o = append(o, kv{"minimum", t.Minimum})
		}
	case document.Const:
		o = obj{{"const", t.Value}}
	case document.Boolean:
		o = obj{{"type", "boolean"}}
	case document.Object, document.OneNode:
		switch {
		case t.Fields != nil:
			o = obj(g.object(t, false))
		case t.Values != nil:
			o = obj{{"type", "object"}, {"additionalProperties", g.typeSchema(t.Values, true)}}
		default:
			o = obj{{"type", "object"}}
		}
	case document.ObjectOrBool:
		o = obj{{"type", []any{"object", "boolean"}}}
	case document.Array:
		o = obj{{"type", "array"}}
		if t.Items != nil {
			o = append(o, kv{"items", g.typeSchema(t.Items, true)})
		}
		if t.Unique {
			o = append(o, kv{"uniqueItems", true})
		}
	case document.Enum:
		enum := make([]any, len(t.Enum))
		for i, e := range t.Enum {
			enum[i] = e
		}
		o = obj{{"enum", enum}}
	case document.Nodes:
		o = obj{{"type", "array"}, {"minItems", 1}, {"items", g.ref("node")}}
	default:
		if g.err == nil {
			g.err = fmt.Errorf("no schema for kind %d", t.Kind)
		}
	}
	if !t.Template {
		return o
	}
	tmpl := g.ref("template")
	if t.TemplateFirst {
		return obj{{"anyOf", []any{tmpl, o}}}
	}
	return obj{{"anyOf", []any{o, tmpl}}}
}

// obj is a JSON object that keeps its members' order, written on one line.
type obj []kv

// block is an obj written one member a line.
type block []kv

// list is an array written one item a line.
type list []any

type kv struct {
	k string
	v any
}

// raw is JSON text written as it is.
type raw string

// write writes v as the schema's lines are: an obj and an array on one
// line, ", " between items and ": " after keys; a block and a list one
// member or item a line, under indent.
func write(b *strings.Builder, v any, indent string) {
	switch v := v.(type) {
	case block:
		if len(v) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range v {
			b.WriteString(indent + "  " + jsonString(m.k) + ": ")
			write(b, m.v, indent+"  ")
			if i < len(v)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case list:
		b.WriteString("[\n")
		for i, e := range v {
			b.WriteString(indent + "  ")
			write(b, e, indent+"  ")
			if i < len(v)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	case obj:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(jsonString(m.k) + ": ")
			write(b, m.v, indent)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, e, indent)
		}
		b.WriteByte(']')
	case string:
		b.WriteString(jsonString(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case raw:
		b.WriteString(string(v))
	default:
		panic(fmt.Sprintf("schemagen: cannot write %T", v))
	}
}

// jsonString quotes s as JSON does, without escaping HTML.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
