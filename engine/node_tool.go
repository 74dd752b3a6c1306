package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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

func (toolKind) Prepare(c *Compiler) Step {
	c.With()
	ts, tsLit := c.Literal("toolset")
	if tsLit && !c.services().toolsets[ts] {
		c.RuntimeErrorf("toolset", "node %q: unknown toolset %q: not in runtime.toolsets%s", c.NodeID(), ts, c.missingHint("toolsets", ts, func() []string { return sortedKeys(c.services().toolsets) }))
		return nil
	}
	if tool, ok := c.Literal("tool"); ok && tsLit {
		c.StaticAction(protocol.ActionToolCall, ts+"/"+tool)
	}
	return StepFunc(runTool)
}

func runTool(ctx context.Context, call *Call) (any, error) {
	w := call.WithMap()
	f := call.Fields()
	ts, _ := f.String("toolset")
	tool, _ := f.String("tool")
	if err := f.Err(); err != nil {
		return nil, err
	}
	if ts == "" || tool == "" {
		return nil, Errorf(protocol.CodeExpressionError, "with.toolset and with.tool must not be empty")
	}
	var args map[string]any
	switch a := w["arguments"].(type) {
	case nil:
	case map[string]any:
		args = a
	default:
		return nil, Errorf(protocol.CodeExpressionError, "with.arguments must be an object, got %s", jsonKind(a))
	}
	res, err := call.callTool(ctx, ts, tool, args)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, Errorf(protocol.CodeToolError, "tool %s/%s returned an error: %s", ts, tool, clipMessage(orDefault(resultText(res), "(no message)")))
	}
	out := map[string]any{"content": contentOutput(res.Content), "isError": false}
	if res.Structured != nil {
		out["structured"] = res.Structured
	}
	return out, nil
}

// callTool authorizes tool.call on "toolset/tool" and calls the tool. A
// denial or a consent is returned as Authorize returns it.
func (c *Call) callTool(ctx context.Context, ts, tool string, args map[string]any) (*toolsets.Result, error) {
	set := c.services().tools
	if set == nil || !set.Has(ts) {
		return nil, Errorf(protocol.CodeToolError, "unknown toolset %q: not in runtime.toolsets", ts)
	}
	resource := ts + "/" + tool
	if err := c.Authorize(ctx, protocol.ActionToolCall, resource); err != nil {
		return nil, err
	}
	// Only a tool the server listed, by its exact name. The policy
	// decided on the name as written (as preflight does): "Delete_repo"
	// may pass a deny of "gh/delete_*", but as the server lists only
	// "delete_repo" it is refused here, so a server that matches names
	// loosely never runs delete_repo for it.
	list, err := set.Tools(ctx, ts)
	if err != nil {
		return nil, toolError(ctx, err)
	}
	if !slices.ContainsFunc(list, func(t toolsets.Tool) bool { return t.Name == tool }) {
		return nil, Errorf(protocol.CodeToolError, "toolset %q lists no tool named %q%s", ts, tool, listedHint(list, tool))
	}
	// What the MCP client writes of the arguments is charged before it
	// writes it (encode_sent.go), held until the call returns.
	limit := c.Limits().MemoryBudget
	if limit <= 0 {
		limit = 1 << 40 // no budget: charged, never refused
	}
	n, err := sentValueSize("the tool's arguments", args, limit)
	if err != nil {
		return nil, err
	}
	sent, err := c.r.chargeAuthor("the tool's arguments (as the MCP client holds them while writing them)", toolArgsHeld*n)
	if err != nil {
		return nil, err
	}
	defer sent.release()
	c.usage().toolCalls.Add(1)
	res, err := set.Call(ctx, ts, tool, args)
	if err != nil {
		return nil, toolError(ctx, err)
	}
	// Scrubbed at the door, like every reply: a server that echoes a
	// secret (a header of its toolset, an argument) cannot hand it on.
	sc := c.scrub()
	for i, b := range res.Content {
		res.Content[i] = sc.Raw(b)
	}
	res.Structured = sc.Value(res.Structured)
	return res, nil
}

// listedHint names the listed tool that differs from tool only in case,
// else nothing: names are matched exactly.
func listedHint(list []toolsets.Tool, tool string) string {
	for _, t := range list {
		if strings.EqualFold(t.Name, tool) {
			return fmt.Sprintf(" (names are case-sensitive: it lists %q)", t.Name)
		}
	}
	return ""
}

// toolError maps a toolset failure to the node's code. A call that ended
// with its context is left to the scheduler; the toolset's own timeoutMs is
// TIMEOUT.
func toolError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if ne := readLimitError(err); ne != nil {
		return ne
	}
	switch {
	case errors.Is(err, toolsets.ErrTimeout):
		return &NodeError{Code: protocol.CodeTimeout, Message: err.Error(), Err: err}
	case errors.Is(err, toolsets.ErrTooManyPages), errors.Is(err, toolsets.ErrTooManyTools):
		return &NodeError{Code: protocol.CodeLimitExceeded, Message: err.Error(), Err: err}
	}
	return &NodeError{Code: protocol.CodeToolError, Message: err.Error(), Err: err}
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

// maxMessage bounds the part of an error message that a server wrote: a
// node error travels in events and in nodes.<id>.error, not a body.
const maxMessage = 2000

// clipMessage cuts s to maxMessage bytes on a character boundary.
func clipMessage(s string) string { return clipText(s, maxMessage, "…") }

// clipText cuts s to limit bytes on a character boundary and marks the
// cut with tail.
func clipText(s string, limit int, tail string) string {
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + tail
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
