package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

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
	leaves, ok := schemaLeaves(path, err)
	if !ok {
		d.add(path, "%v", err)
		return
	}
	reportLeaves(leaves, d)
}

// schemaLeaves lists the failing leaves of a validation error, located
// under path; ok is false when err is not a validation error.
func schemaLeaves(path string, err error) (leaves []schemaLeaf, ok bool) {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil, false
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			l := schemaLeaf{loc: joinPath(path, e.InstanceLocation), msg: e.ErrorKind.LocalizedString(printer)}
			switch k := e.ErrorKind.(type) {
			case *kind.Required:
				l.members = k.Missing
			case *kind.AdditionalProperties:
				// The validator lists them in map order; sorted, the
				// message is the same every time.
				l.members = slices.Sorted(slices.Values(k.Properties))
				l.msg = additionalMessage(l.members)
			}
			leaves = append(leaves, l)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return leaves, true
}

// reportLeaves adds leaves to d in path order, one message a place, and
// covers what they name: a missing or unknown member is reported at its
// object, but the later checks that would trip over it are those of the
// member, not of the whole object.
func reportLeaves(leaves []schemaLeaf, d *detailList) {
	// Stable: anyOf alternatives fail at the same place, and the first
	// one's message is kept.
	slices.SortStableFunc(leaves, func(a, b schemaLeaf) int { return comparePaths(a.loc, b.loc) })
	for i, l := range leaves {
		if i == 0 || leaves[i-1].loc != l.loc {
			d.add(l.loc, "%s", l.msg)
		}
	}
	for _, l := range leaves {
		if l.members == nil {
			d.cover(l.loc)
			continue
		}
		for _, m := range l.members {
			d.cover(l.loc + "." + m)
		}
	}
}

// comparePaths orders paths as strings, but indexes by value: nodes[2]
// before nodes[10].
func comparePaths(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := i, j
			for ei < len(a) && isDigit(a[ei]) {
				ei++
			}
			for ej < len(b) && isDigit(b[ej]) {
				ej++
			}
			x, y := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if c := cmp.Compare(len(x), len(y)); c != 0 {
				return c
			}
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
			if c := cmp.Compare(ei-i, ej-j); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i++
		j++
	}
	return cmp.Compare(len(a)-i, len(b)-j)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

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
