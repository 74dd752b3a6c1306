package nodes

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// toolKind calls one tool of an MCP toolset of runtime.toolsets:
//
//	with: {toolset, tool, arguments}
//	output: {content[], structured?, isError: false}
//
// A result the tool marks isError fails the node with TOOL_ERROR, its text
// content as the message (redacted like every message): the tool ran and
// said it failed, which a workflow handles with onError: "continue" and
// nodes.<id>.error like any failure. A toolset timeout is TIMEOUT; every
// other toolset failure is TOOL_ERROR.
type toolKind struct{}

var toolWith = document.With{Required: true, Doc: "One call to a tool.", Fields: []document.Field{
	{Name: "toolset", Type: document.Name, Required: true, Doc: "The toolset, in runtime.toolsets."},
	{Name: "tool", Type: document.Name, Required: true, Doc: "The tool's name."},
	{Name: "arguments", Type: document.ObjectOrTemplate, Doc: "The tool's arguments."},
}}

func (*toolKind) With() *document.With { return &toolWith }

func (*toolKind) Prepare(c *engine.Compiler) engine.Step {
	c.With()
	ts, tsLit := c.Literal("toolset")
	if tsLit {
		if ok, hint := c.LookupToolset(ts); !ok {
			c.RuntimeErrorf("toolset", "node %q: unknown toolset %q: not in runtime.toolsets%s", c.NodeID(), ts, hint)
			return nil
		}
	}
	if tool, ok := c.Literal("tool"); ok && tsLit {
		c.StaticAction(protocol.ActionToolCall, ts+"/"+tool)
	}
	return engine.StepFunc(runTool)
}

func runTool(ctx context.Context, call *engine.Call) (any, error) {
	w := call.WithMap()
	f := call.Fields()
	ts, _ := f.String("toolset")
	tool, _ := f.String("tool")
	if err := f.Err(); err != nil {
		return nil, err
	}
	if ts == "" || tool == "" {
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.toolset and with.tool must not be empty")
	}
	var args map[string]any
	switch a := w["arguments"].(type) {
	case nil:
	case map[string]any:
		args = a
	default:
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.arguments must be an object, got %s", engine.JSONType(a))
	}
	res, err := call.Tool(ctx, ts, tool, args)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, engine.Errorf(protocol.CodeToolError, "tool %s/%s returned an error: %s", ts, tool, clipMessage(orDefault(resultText(res), "(no message)")))
	}
	out := map[string]any{"content": contentOutput(res.Content), "isError": false}
	if res.Structured != nil {
		out["structured"] = res.Structured
	}
	return out, nil
}

// contentOutput decodes the MCP content blocks for the node output, where
// expressions read them (nodes.t.output.content[0].text).
func contentOutput(blocks []json.RawMessage) []any {
	out := make([]any, 0, len(blocks))
	for _, b := range blocks {
		v, err := decodeJSON(b)
		if err != nil {
			continue // the SDK produced it: not expected
		}
		out = append(out, v)
	}
	return out
}

// resultText is what a tool result says, as text: its text blocks joined,
// else its structured content as JSON, else its other blocks as JSON.
func resultText(res *toolsets.Result) string {
	var texts, others []string
	for _, b := range res.Content {
		var block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &block) == nil && block.Type == "text" {
			texts = append(texts, block.Text)
			continue
		}
		others = append(others, string(b))
	}
	if len(texts) > 0 {
		return strings.Join(texts, "\n")
	}
	if res.Structured != nil {
		if b, err := json.Marshal(res.Structured); err == nil {
			return string(b)
		}
	}
	return strings.Join(others, "\n")
}
