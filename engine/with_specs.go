package engine

import (
	"strings"

	"github.com/runnerd/lambda-runner/engine/document"
)

// The with of each built-in node type, described once: the document's
// check (engine/document) and docs/workflow.schema.json (go generate,
// internal/schemagen) both come from these. The order of withKinds is the
// order of the schema's if/then rows. Literal marks what the kind takes as
// written (Compiler.With leaves it out, or it is compiled otherwise);
// Secrets what it compiles with Compiler.SecretTemplate.

// withKinds lists the node types in the schema's order.
var withKinds = []string{"set", "fail", "map", "workflow", "model", "agent", "tool", "http", "code"}

// WithSpecs returns the with of each built-in node type, by type. The
// caller must not change them.
func WithSpecs() document.Withs { return withSpecs }

// WithKinds lists the built-in node types in the order the workflow
// schema lists their with.
func WithKinds() []string { return withKinds }

var withSpecs = document.Withs{
	"set": &setWith, "fail": &failWith, "map": &mapWith, "workflow": &workflowWith,
	"model": &modelWith, "agent": &agentWith, "tool": &toolWith, "http": &httpWith, "code": &codeWith,
}

var (
	str         = document.Type{Kind: document.String}
	str1        = document.Type{Kind: document.String, MinLength: 1}
	anyValue    = document.Type{Kind: document.Any}
	intOrTmpl   = document.Type{Kind: document.Integer, Template: true, Def: "intOrTemplate"}
	objOrTmpl   = document.Type{Kind: document.Object, Template: true}
	names       = document.Type{Kind: document.Array, Items: &str1}
	messageType = document.Type{Kind: document.Object, Fields: []document.Field{
		{Name: "role", Type: document.Type{Kind: document.Enum, Enum: []string{"user", "assistant"}}, Required: true, Doc: "Who said it."},
		{Name: "content", Type: str, Required: true, Doc: "What was said."},
	}}
)

var setWith = document.With{Doc: "The value the node outputs.", Fields: []document.Field{
	{Name: "value", Type: anyValue, Doc: "The node's output; templates in it are evaluated."},
}}

var failWith = document.With{Doc: "The error the node fails with.", Fields: []document.Field{
	{Name: "message", Type: str, Doc: "The error's message."},
	{Name: "code", Type: document.Type{Kind: document.String, Pattern: `^[A-Z][A-Z0-9_]*$|\$\{\{`, Match: isErrorCodeOrTemplate}, Default: `"FAILED"`, Doc: "The error's code, UPPER_SNAKE_CASE."},
}}

// isErrorCodeOrTemplate is fail's code pattern, in Go.
func isErrorCodeOrTemplate(s string) bool { return isErrorCode(s) || strings.Contains(s, "${{") }

func isErrorCode(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if b := s[i]; !(b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

var mapWith = document.With{Required: true, Doc: "A sub-graph run once per item.", Fields: []document.Field{
	{Name: "items", Type: document.Type{Kind: document.Array, Template: true}, Required: true, Doc: "An expression (a ${{ }} string) or a literal array."},
	{Name: "concurrency", Type: document.Type{Kind: document.Integer, Minimum: 1, Template: true}, Doc: "Iterations running at once; at most the runner's maxConcurrency, which is also the default."},
	{Name: "nodes", Type: document.Type{Kind: document.Nodes}, Required: true, Literal: true, Doc: "The sub-graph run for each item."},
	{Name: "output", Type: anyValue, Doc: "Per-item output, templated in the iteration's scope. Absent: the outputs of the iteration's sink nodes."},
	{Name: "distribute", Type: document.Type{Kind: document.Object, Fields: []document.Field{
		{Name: "batchSize", Type: document.Type{Kind: document.Integer, Minimum: 1}, Doc: "Items per child invocation (fewer when a batch would pass Lambda's 6 MB event). Absent: the items spread evenly over invocations."},
		{Name: "invocations", Type: document.Type{Kind: document.Integer, Minimum: 1}, Required: true, Doc: "Child invocations running at once; at most the runner's maxFanOutInvocations."},
	}}, Literal: true, Doc: "Run the items in batches, each in another invocation of the runner's function (docs/workflows.md, Distributed maps). Only on a top-level map, and only when the runner's constraints.maxFanOutInvocations is above 0."},
}}

var workflowWith = document.With{Required: true, Doc: "A child workflow, run as one node.", Fields: []document.Field{
	{Name: "workflow", Type: str1, Required: true, Doc: "The child workflow's id, in runtime.workflows."},
	{Name: "input", Type: anyValue, Doc: "The child's input."},
}}

// modelFields are the members model and agent nodes share.
var modelFields = []document.Field{
	{Name: "role", Type: str1, Doc: "The model role, in runtime.models."},
	{Name: "system", Type: str, Doc: "The system prompt."},
	{Name: "prompt", Type: str, Doc: "The user prompt."},
	{Name: "messages", Type: document.Type{Kind: document.Array, Items: &messageType, Template: true, TemplateFirst: true, Def: "messages"}, Doc: "The conversation so far."},
	{Name: "temperature", Type: document.Type{Kind: document.Number, Template: true, Def: "numberOrTemplate"}, Doc: "The sampling temperature."},
	{Name: "maxTokens", Type: intOrTmpl, Doc: "The most tokens the reply may have."},
}

var modelWith = document.With{Required: true, Doc: "One call to a model.", Fields: append(slicesClip(modelFields),
	document.Field{Name: "json", Type: document.Type{Kind: document.ObjectOrBool}, Literal: true, Doc: "JSON Schema the reply must satisfy; the reply is parsed into output.json."},
)}

var agentWith = document.With{Required: true, Doc: "A model that calls tools until it answers.", Fields: append(slicesClip(modelFields),
	document.Field{Name: "toolsets", Type: names, Doc: "The toolsets it may use, in runtime.toolsets."},
	document.Field{Name: "tools", Type: names, Doc: "The tools it may use (toolset.tool)."},
	document.Field{Name: "maxSteps", Type: intOrTmpl, Doc: "The most model calls it makes."},
)}

func slicesClip(f []document.Field) []document.Field { return f[:len(f):len(f)] }

var toolWith = document.With{Required: true, Doc: "One call to a tool.", Fields: []document.Field{
	{Name: "toolset", Type: str1, Required: true, Doc: "The toolset, in runtime.toolsets."},
	{Name: "tool", Type: str1, Required: true, Doc: "The tool's name."},
	{Name: "arguments", Type: objOrTmpl, Doc: "The tool's arguments."},
}}

var httpWith = document.With{Required: true, Doc: "One HTTP request.", Fields: []document.Field{
	{Name: "method", Type: str, Default: `"GET"`, Doc: "The request's method."},
	{Name: "url", Type: str1, Required: true, Secrets: true, Doc: "The URL."},
	{Name: "query", Type: objOrTmpl, Secrets: true, Doc: "The URL's query parameters."},
	{Name: "headers", Type: document.Type{Kind: document.Object, Values: &str, Template: true}, Secrets: true, Doc: "The request's headers."},
	{Name: "body", Type: anyValue, Secrets: true, Doc: "The request's body."},
	{Name: "timeoutMs", Type: intOrTmpl, Doc: "How long the request may take."},
	{Name: "responseType", Type: document.Type{Kind: document.Enum, Enum: []string{"json", "text", "auto"}}, Default: `"auto"`, Doc: "How the response's body is read."},
	{Name: "failOnStatus", Type: document.Type{Kind: document.Boolean}, Doc: "Fail on a status of 400 or more."},
}}

var codeWith = document.With{Required: true, Doc: "JavaScript run in the sandbox.", Fields: []document.Field{
	{Name: "code", Type: str, Required: true, Literal: true, Doc: "The body of a JavaScript function of one argument, input; its return value (JSON) is the node's output. Taken as written, never templated."},
	{Name: "input", Type: anyValue, Doc: "The function's argument, templated."},
}}
