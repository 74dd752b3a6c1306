package document

import "strings"

// The workflow document's structure, described once, with the types a
// with is described by (with.go): the check walks it (check.go), and
// internal/schemagen writes all of docs/workflow.schema.json from it and
// the node types' withs. So the published schema and the rules a request
// is held to are one text's two readings, and no test need compare them.

// Schema describes a JSON document: what internal/schemagen writes as a
// JSON Schema (draft 2020-12) and the check holds a document to.
type Schema struct {
	// ID is the schema's $id, by which other schemas refer to it.
	ID string
	// Title and Doc are the schema's title and description.
	Title, Doc string
	// Fields are the document's members; no other member is allowed.
	Fields []Field
	// Defs are the named types written in the schema's $defs, in this
	// order, before the with of each node type (and the named types the
	// withs bring, each written before the first with that uses it).
	Defs []*Type
}

// Workflow is the workflow document (Runner protocol v1).
var Workflow = Schema{
	ID:     "https://runnerd.dev/schemas/workflow-v1.json",
	Title:  "Workflow document v1",
	Doc:    "A workflow run by the serverless runner (Runner protocol v1). Strings in `with` and `output` may hold ${{ expr }} templates; `when` is a bare expression.",
	Fields: workflowFields,
	Defs:   []*Type{&nodeID, &expression, &templateText, &IntOrTemplate, &NumberOrTemplate, &stringOrTemplate, &node, &retry},
}

var workflowFields = []Field{
	{Name: "$schema", Type: Text, Doc: "The schema an editor checks this document against (ignored by the runner)."},
	{Name: "id", Type: Name, Doc: "The workflow's id; required for child workflows in runtime.workflows."},
	{Name: "version", Type: Type{Kind: Const, Value: 1}, Doc: "The document version, 1."},
	{Name: "name", Type: Text},
	{Name: "description", Type: Text},
	{Name: "input", Type: Type{Kind: ObjectOrBool}, Doc: "JSON Schema (draft 2020-12) the execution input must satisfy."},
	{Name: "nodes", Type: Type{Kind: Array, Items: &node}, Required: true},
	{Name: "output", Type: AnyValue, Doc: "The execution's output, templated. Absent: an object of the outputs of completed nodes that nothing needs."},
}

// node is a node of the document or of a sub-graph (Nodes); its with is
// held to the With of its type besides (the schema's if/then rows).
var node = Type{Kind: OneNode, Def: "node", Fields: []Field{
	{Name: "id", Type: nodeID, Required: true},
	{Name: "type", Type: Name, Required: true},
	{Name: "name", Type: Text},
	{Name: "description", Type: Text},
	{Name: "needs", Type: Type{Kind: Array, Items: &nodeID, Unique: true}},
	{Name: "when", Type: expression},
	{Name: "with", Type: Type{Kind: Object}},
	{Name: "retry", Type: retry},
	{Name: "timeoutMs", Type: Type{Kind: Integer, Minimum: 1}},
	{Name: "onError", Type: Type{Kind: Enum, Enum: []string{"fail", "continue"}}},
}}

// retry is a node's retry policy; the members it leaves out keep
// DefaultRetry's values.
var retry = Type{Kind: Object, Def: "retry", Fields: []Field{
	{Name: "maxAttempts", Type: Type{Kind: Integer, Minimum: 1, Maximum: 10}},
	{Name: "backoffMs", Type: Type{Kind: Integer}},
	{Name: "factor", Type: Type{Kind: Number, Minimum: 1, Bounded: true}},
	{Name: "maxBackoffMs", Type: Type{Kind: Integer}},
}}

// The named types of the document itself.
var (
	// nodeID is a node's id, which expressions name (nodes.<id>).
	nodeID = Type{Kind: String, Pattern: `^[A-Za-z_][A-Za-z0-9_-]*$`, Match: isNodeID, Def: "id"}
	// expression is a bare expression (a node's when).
	expression = Type{Kind: String, MinLength: 1, Def: "expression"}
	// templateText is a string holding a ${{ }} template: the alternative
	// a Type with Template allows.
	templateText = Type{Kind: String, Pattern: `\$\{\{`, Match: isTemplate, Def: "template"}
	// stringOrTemplate is any string, a template being one. No member
	// refers to it; the schema keeps it for the documents that do.
	stringOrTemplate = Type{Kind: String, Def: "stringOrTemplate"}
)

// isNodeID is nodeID's pattern in Go.
func isNodeID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '_' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z':
		case i > 0 && (b == '-' || b >= '0' && b <= '9'):
		default:
			return false
		}
	}
	return true
}

// isTemplate is templateText's pattern in Go.
func isTemplate(s string) bool { return strings.Contains(s, "${{") }
