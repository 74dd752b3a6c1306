package document

import (
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// santhosh-tekuri/jsonschema is the oracle of the tests that hold the
// hand-written document checks (check.go, rules.go, with.go) to docs/workflow.schema.json:
// a test-only import, not in the product (requests' own schemas are
// compiled by engine/schema).

// printer is the oracle's: its messages are printed in English by
// x/text, as schemaSprintf imitates (format_test.go).
var printer = message.NewPrinter(language.English)

// schemaLeaves lists the failing leaves of the oracle's validation error,
// located under path; ok is false when err is not a validation error.
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
