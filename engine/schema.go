package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/runnerd/lambda-runner/docs"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var (
	workflowSchemaOnce sync.Once
	workflowSchema     *jsonschema.Schema
	workflowSchemaErr  error
	printer            = message.NewPrinter(language.English)
)

// documentSchema returns the compiled workflow document schema
// (docs/workflow.schema.json), compiled once per process.
func documentSchema() (*jsonschema.Schema, error) {
	workflowSchemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs.WorkflowSchema))
		if err != nil {
			workflowSchemaErr = fmt.Errorf("engine: workflow schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("workflow.schema.json", doc); err != nil {
			workflowSchemaErr = fmt.Errorf("engine: workflow schema: %w", err)
			return
		}
		workflowSchema, workflowSchemaErr = c.Compile("workflow.schema.json")
	})
	return workflowSchema, workflowSchemaErr
}

// compileSchema compiles a JSON Schema carried by a request (a workflow's
// input schema, a model node's json schema). It never loads remote
// references: a runner must not fetch URLs named by its callers.
func compileSchema(raw any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("request.schema.json", raw); err != nil {
		return nil, err
	}
	return c.Compile("request.schema.json")
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote schema %q is not loaded: schemas must be self-contained", url)
}

// schemaDetails turns a validation error into details under path, one per
// failing leaf, deduplicated by location.
func schemaDetails(path string, err error, d *detailList) {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		d.add(path, "%v", err)
		return
	}
	type leaf struct{ loc, msg string }
	var leaves []leaf
	var covers []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := joinPath(path, e.InstanceLocation)
			leaves = append(leaves, leaf{loc, e.ErrorKind.LocalizedString(printer)})
			// A missing or unknown member is reported at its object; the
			// later checks that would trip over it are those of the
			// member, not of the whole object.
			switch k := e.ErrorKind.(type) {
			case *kind.Required:
				for _, m := range k.Missing {
					covers = append(covers, loc+"."+m)
				}
			case *kind.AdditionalProperties:
				for _, m := range k.Properties {
					covers = append(covers, loc+"."+m)
				}
			default:
				covers = append(covers, loc)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// anyOf alternatives fail at the same place: keep one message a place,
	// the deepest places first being the most precise.
	seen := map[string]bool{}
	for _, l := range leaves {
		if seen[l.loc] {
			continue
		}
		seen[l.loc] = true
		d.add(l.loc, "%s", l.msg)
	}
	for _, c := range covers {
		d.cover(c)
	}
}

// joinPath appends JSON pointer tokens to a dotted path: ["nodes","2","id"]
// becomes "workflow.nodes[2].id".
func joinPath(path string, tokens []string) string {
	var b strings.Builder
	b.WriteString(path)
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

// decodeJSON decodes raw into a generic value with float64 numbers, the
// representation expressions and templates work on.
func decodeJSON(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// schemaValue converts a generic value to what the schema validator wants
// (it compares numbers exactly as json.Number).
func schemaValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func schemaValueRaw(raw []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// validateValue checks a generic value against a compiled schema.
func validateValue(sch *jsonschema.Schema, v any) error {
	inst, err := schemaValue(v)
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}
