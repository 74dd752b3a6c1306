// Command schemagen writes the with of each node type into
// docs/workflow.schema.json from the specs of the node types an engine registers (Engine.WithSpecs,
// engine/nodes and the engine's own map and workflow), in the order of their names:
// the node schema's if/then rows, which pick each type's with and say
// whether it is required, and the with.* definitions. The rest of the
// file is kept as written. Run by go generate in docs/; the test fails
// when the checked-in schema is not what it writes.
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
	old, err := os.ReadFile(file)
	if err != nil {
		log.Fatal(err)
	}
	out, err := generate(old, specs())
	if err != nil {
		log.Fatalf("%s: %v", file, err)
	}
	if !bytes.Equal(out, old) {
		if err := os.WriteFile(file, out, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// specs returns the with of every built-in node type.
func specs() document.Withs { return engine.New(engine.Limits{}).WithSpecs() }

// The generated parts of the schema, found by these lines.
const (
	allOfStart = "      \"allOf\": [\n"
	allOfEnd   = "      ]\n"
	defsStart  = "    \"with." // the first with definition, up to the end of $defs
	fileEnd    = "  }\n}\n"
)

// generate returns schema with its generated parts written from withs,
// in the order of their node types' names.
func generate(schema []byte, withs document.Withs) ([]byte, error) {
	kinds := slices.Sorted(maps.Keys(withs))
	s := string(schema)
	i := strings.Index(s, allOfStart)
	if i < 0 {
		return nil, fmt.Errorf("no node allOf")
	}
	j := strings.Index(s[i:], allOfEnd)
	k := strings.Index(s, defsStart)
	if j < 0 || k < i || !strings.HasSuffix(s, fileEnd) {
		return nil, fmt.Errorf("the with definitions are not where they were")
	}
	j += i
	// A definition the hand-written part holds is referred to, not
	// written again.
	defined := func(name string) bool {
		return strings.Contains(s[:k], "\n    "+strconv.Quote(name)+": ")
	}
	var rows, defs strings.Builder
	written := map[string]bool{}
	for n, kind := range kinds {
		w := withs[kind]
		if w == nil {
			return nil, fmt.Errorf("no with for %q", kind)
		}
		then := obj{}
		if w.Required {
			then = append(then, kv{"required", []any{"with"}})
		}
		then = append(then, kv{"properties", obj{{"with", obj{{"$ref", "#/$defs/with." + kind}}}}})
		row := obj{
			{"if", obj{{"required", []any{"type"}}, {"properties", obj{{"type", obj{{"const", kind}}}}}}},
			{"then", then},
		}
		rows.WriteString("        ")
		write(&rows, row)
		if n < len(kinds)-1 {
			rows.WriteByte(',')
		}
		rows.WriteByte('\n')
		// Named types first, each once, before the first with using it.
		for _, f := range w.Fields {
			if d := f.Type.Def; d != "" && !written[d] && !defined(d) {
				written[d] = true
				defs.WriteString("    " + strconv.Quote(d) + ": ")
				write(&defs, typeSchema(&f.Type, false))
				defs.WriteString(",\n")
			}
		}
		defs.WriteString("    " + strconv.Quote("with."+kind) + ": {\n")
		defs.WriteString("      \"type\": \"object\",\n")
		if req := required(w.Fields); req != nil {
			defs.WriteString("      \"required\": ")
			write(&defs, req)
			defs.WriteString(",\n")
		}
		defs.WriteString("      \"properties\": {\n")
		for m := range w.Fields {
			f := &w.Fields[m]
			defs.WriteString("        " + strconv.Quote(f.Name) + ": ")
			write(&defs, fieldSchema(f))
			if m < len(w.Fields)-1 {
				defs.WriteByte(',')
			}
			defs.WriteByte('\n')
		}
		defs.WriteString("      },\n      \"additionalProperties\": false\n    }")
		if n < len(kinds)-1 {
			defs.WriteByte(',')
		}
		defs.WriteByte('\n')
	}
	return []byte(s[:i+len(allOfStart)] + rows.String() + s[j:k] + defs.String() + fileEnd), nil
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
func fieldSchema(f *document.Field) obj {
	o := typeSchema(&f.Type, true)
	if f.Default != "" {
		o = append(o, kv{"default", raw(f.Default)})
	}
	if f.Doc != "" {
		o = append(o, kv{"description", f.Doc})
	}
	return o
}

// typeSchema is t's schema; ref refers to a named type rather than
// writing it.
func typeSchema(t *document.Type, ref bool) obj {
	if ref && t.Def != "" {
		return obj{{"$ref", "#/$defs/" + t.Def}}
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
	case document.Number:
		o = obj{{"type", "number"}}
	case document.Boolean:
		o = obj{{"type", "boolean"}}
	case document.Object:
		o = obj{{"type", "object"}}
		switch {
		case t.Fields != nil:
			if req := required(t.Fields); req != nil {
				o = append(o, kv{"required", req})
			}
			props := obj{}
			for i := range t.Fields {
				props = append(props, kv{t.Fields[i].Name, fieldSchema(&t.Fields[i])})
			}
			o = append(o, kv{"properties", props}, kv{"additionalProperties", false})
		case t.Values != nil:
			o = append(o, kv{"additionalProperties", typeSchema(t.Values, true)})
		}
	case document.ObjectOrBool:
		o = obj{{"type", []any{"object", "boolean"}}}
	case document.Array:
		o = obj{{"type", "array"}}
		if t.Items != nil {
			o = append(o, kv{"items", typeSchema(t.Items, true)})
		}
	case document.Enum:
		enum := make([]any, len(t.Enum))
		for i, e := range t.Enum {
			enum[i] = e
		}
		o = obj{{"enum", enum}}
	case document.Nodes:
		o = obj{{"type", "array"}, {"minItems", 1}, {"items", obj{{"$ref", "#/$defs/node"}}}}
	}
	if !t.Template {
		return o
	}
	tmpl := obj{{"$ref", "#/$defs/template"}}
	if t.TemplateFirst {
		return obj{{"anyOf", []any{tmpl, o}}}
	}
	return obj{{"anyOf", []any{o, tmpl}}}
}

// obj is a JSON object that keeps its members' order.
type obj []kv

type kv struct {
	k string
	v any
}

// raw is JSON text written as it is.
type raw string

// write writes v as the schema's hand-written lines are: on one line, ", "
// between items and ": " after keys.
func write(b *strings.Builder, v any) {
	switch v := v.(type) {
	case obj:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(m.k) + ": ")
			write(b, m.v)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, e)
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
