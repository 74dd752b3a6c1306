package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// Agent limits: a step is one model call.
const (
	DefaultAgentSteps = 8
	MaxAgentSteps     = 32
)

// agentKind runs a model in a loop with the tools of MCP toolsets:
//
//	with: the model node's fields (no json) + {toolsets[], tools[], maxSteps}
//	output: {text, steps[], usage{inputTokens, outputTokens}}
//
// Each step is one model call (model.invoke is authorized for every call).
// The model sees the tools of with.toolsets, narrowed by with.tools (globs
// matched against the tool name and against "toolset/tool"), under names
// "toolset__tool" made to fit the providers' rules ([a-zA-Z0-9_-]{1,64}).
// Every tool call the model makes is authorized (tool.call on
// "toolset/tool") and run in order; its result goes back to the model:
//
//   - a denied call is not run: the model is told it was denied and may
//     carry on without it; the step is recorded with denied: true;
//   - a call needing consent suspends the node (the conversation is not
//     kept: the relaunch with the grant starts the agent again);
//   - a result the tool marks isError, and an error the MCP server answers
//     with (bad arguments, say), are given to the model to recover from;
//   - a toolset failure (unreachable, timed out) fails the node, TOOL_ERROR
//     or TIMEOUT, as a tool node would.
//
// The loop ends when the model answers without asking for a tool. When the
// model still asks for one at its maxSteps-th call (default 8, at most 32)
// the node fails with LIMIT_EXCEEDED rather than return a half-done answer;
// those last calls are not run.
//
// steps[] lists the tool calls in order, each {tool: "toolset/tool" (the
// model's own name for an unknown tool), arguments, isError, denied?}.
type agentKind struct{}

var agentWith = document.With{Required: true, Doc: "A model that calls tools until it answers.", Fields: append(slices.Clip(modelFields),
	document.Field{Name: "toolsets", Type: document.Names, Doc: "The toolsets it may use, in runtime.toolsets."},
	document.Field{Name: "tools", Type: document.Names, Doc: "The tools it may use (toolset.tool)."},
	document.Field{Name: "maxSteps", Type: document.IntOrTemplate, Doc: "The most model calls it makes."},
)}

func (*agentKind) With() *document.With { return &agentWith }

func (*agentKind) Prepare(c *engine.Compiler) engine.Step {
	c.With()
	prepareModelFields(c)
	literalStrings(c, "toolsets", func(field, name string) {
		if ok, hint := c.LookupToolset(name); !ok {
			c.RuntimeErrorf(field, "node %q: unknown toolset %q: not in runtime.toolsets%s", c.NodeID(), name, hint)
		}
	})
	literalStrings(c, "tools", func(field, pat string) {
		if err := glob.Validate(pat); err != nil {
			c.Errorf(field, "%v", err)
		}
	})
	c.Fields().Int("maxSteps", 1, MaxAgentSteps)
	return engine.StepFunc(runAgent)
}

// literalStrings calls check with the path and value of each literal
// string of the array with.field; templated elements are known only at
// run time, where stringList reads them.
func literalStrings(c *engine.Compiler, field string, check func(path, s string)) {
	raw, _ := c.Raw(field)
	list, _ := raw.([]any)
	for i, v := range list {
		if s, isStr := v.(string); isStr && !strings.Contains(s, "${{") {
			check(fmt.Sprintf("%s[%d]", field, i), s)
		}
	}
}

func runAgent(ctx context.Context, call *engine.Call) (any, error) {
	w := call.WithMap()
	role, req, err := modelRequest(call)
	if err != nil {
		return nil, err
	}
	names, err := stringList(w, "toolsets")
	if err != nil {
		return nil, err
	}
	filters, err := stringList(w, "tools")
	if err != nil {
		return nil, err
	}
	f := call.Fields()
	maxSteps, ok := f.Int("maxSteps", 1, MaxAgentSteps)
	if err := f.Err(); err != nil {
		return nil, err
	}
	if !ok {
		maxSteps = DefaultAgentSteps
	}
	cat, err := agentCatalog(ctx, call, names, filters)
	if err != nil {
		return nil, err
	}
	req.Tools = cat.tools

	steps := []any{}
	var usage models.Usage
	conv := conversation{limit: call.Limits().Reads().Conversation}
	conv.add(models.Message{Content: req.System})
	for _, m := range req.Messages {
		conv.add(m)
	}
	if err := conv.check(); err != nil {
		return nil, err
	}
	for step := 1; ; step++ {
		res, err := call.Model(ctx, role, req)
		if err != nil {
			return nil, err
		}
		usage.InputTokens += res.Usage.InputTokens
		usage.OutputTokens += res.Usage.OutputTokens
		if len(res.ToolCalls) == 0 {
			return map[string]any{"text": res.Text, "steps": steps, "usage": usageOutput(usage)}, nil
		}
		if step >= maxSteps {
			return nil, engine.Errorf(protocol.CodeLimitExceeded, "maxSteps (%d) reached: the model still asked for %d tool call(s)", maxSteps, len(res.ToolCalls))
		}
		calls := make([]models.ToolCall, len(res.ToolCalls))
		for i, tc := range res.ToolCalls {
			if tc.ID == "" {
				// Some compatible servers leave ids out; the turn that
				// answers a call must name it.
				tc.ID = "call_" + strconv.Itoa(step) + "_" + strconv.Itoa(i)
			}
			calls[i] = tc
		}
		turn := models.Message{Role: models.RoleAssistant, Content: res.Text, ToolCalls: calls}
		if err := conv.add(turn).check(); err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, turn)
		for _, tc := range calls {
			content, rec, err := agentToolCall(ctx, call, cat, tc)
			if err != nil {
				return nil, err
			}
			steps = append(steps, rec)
			result := models.Message{Role: models.RoleTool, Content: content, ToolCallID: tc.ID}
			if err := conv.add(result).check(); err != nil {
				return nil, err
			}
			req.Messages = append(req.Messages, result)
		}
	}
}

// conversation sizes the agent's history, which is held in memory and sent
// back to the model whole with every step, against ReadCaps.Conversation.
type conversation struct {
	limit, size int64
}

// turnOverhead approximates what a turn adds beyond its text: role, ids,
// the provider's JSON framing.
const turnOverhead = 64

// add counts m and returns c.
func (c *conversation) add(m models.Message) *conversation {
	c.size += int64(len(m.Content)+len(m.ToolCallID)) + turnOverhead
	for _, tc := range m.ToolCalls {
		c.size += int64(len(tc.ID)+len(tc.Name)+len(tc.Arguments)) + turnOverhead
	}
	return c
}

// check fails once the history is over the limit: before the turn that
// crossed it is kept, a tool is run for it or the model is sent it.
func (c *conversation) check() error {
	if c.limit > 0 && c.size > c.limit {
		return engine.Errorf(protocol.CodeLimitExceeded, "the agent's conversation would hold about %d bytes, over its cap of %d bytes (four per-node outputs, at most a quarter of the memory budget)", c.size, c.limit)
	}
	return nil
}

// agentTool is a tool the model may call, by the name it was shown.
type agentTool struct{ toolset, tool string }

type toolCatalog struct {
	tools  []models.Tool
	byName map[string]agentTool
}

// agentCatalog lists the tools of the named toolsets that pass the
// filters, under names the providers accept.
func agentCatalog(ctx context.Context, call *engine.Call, names, filters []string) (*toolCatalog, error) {
	cat := &toolCatalog{byName: map[string]agentTool{}}
	seen := map[string]bool{}
	for _, ts := range names {
		if seen[ts] {
			continue
		}
		seen[ts] = true
		list, err := call.Tools(ctx, ts)
		if err != nil {
			return nil, err
		}
		// What a toolset says of its tools goes to the model provider,
		// so it is scrubbed at the door like a tool's results.
		for _, t := range list {
			if !toolSelected(filters, ts, t.Name) {
				continue
			}
			if call.Redact(t.Name) != t.Name {
				// A name that echoes a secret (the toolset's credential,
				// say) is not offered: the provider would be sent it, and
				// a name cannot be redacted and still be called.
				continue
			}
			name := exposedName(ts, t.Name, cat.byName)
			cat.byName[name] = agentTool{toolset: ts, tool: t.Name}
			cat.tools = append(cat.tools, models.Tool{Name: name, Description: call.Redact(t.Description), InputSchema: scrubToolSchema(call, t.InputSchema)})
		}
	}
	if len(filters) > 0 && len(cat.tools) == 0 {
		return nil, engine.Errorf(protocol.CodeToolError, "with.tools selects no tool of toolsets %s", document.JoinQuoted(names))
	}
	return cat, nil
}

// toolSelected applies with.tools: no filter selects every tool.
func toolSelected(filters []string, ts, tool string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if glob.Match(f, tool) || glob.Match(f, ts+"/"+tool) {
			return true
		}
	}
	return false
}

// maxToolName is the longest function name the providers accept.
const maxToolName = 64

// AgentToolName is the name an agent node shows a model for a toolset's
// tool before it is made unique: "toolset__tool" with every character
// outside [a-zA-Z0-9_-] replaced by '_', cut to 64 bytes (what providers
// accept). runnerctl test reads a mocked model's tool calls by it.
func AgentToolName(ts, tool string) string {
	var b strings.Builder
	for _, r := range ts + "__" + tool {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if len(base) > maxToolName {
		base = base[:maxToolName]
	}
	return base
}

// exposedName is AgentToolName(ts, tool) made unique among taken with a
// numeric suffix.
func exposedName(ts, tool string, taken map[string]agentTool) string {
	base := AgentToolName(ts, tool)
	name := base
	for i := 2; ; i++ {
		if _, dup := taken[name]; !dup {
			return name
		}
		suffix := "_" + strconv.Itoa(i)
		name = base[:min(len(base), maxToolName-len(suffix))] + suffix
	}
}

// agentToolCall runs one tool call of the model and returns what the
// model is told and the step to record. Only failures that end the node
// are errors: a suspension, a toolset failure, the end of the context.
func agentToolCall(ctx context.Context, c *engine.Call, cat *toolCatalog, tc models.ToolCall) (string, map[string]any, error) {
	rec := map[string]any{"tool": tc.Name, "isError": true}
	// Arguments are JSON text from the model: an object, or nothing.
	var args map[string]any
	badArgs := false
	if raw := strings.TrimSpace(string(tc.Arguments)); raw != "" {
		var v any
		b := []byte(raw)
		if max := c.Limits().MaxOutputBytes; max > 0 && jsonweight.Of(b) > max {
			// Bounded before it is decoded, as every reply is.
			badArgs = true
		} else if err := json.Unmarshal(b, &v); err != nil {
			badArgs = true
		} else if v != nil {
			rec["arguments"] = v
			var isObject bool
			args, isObject = v.(map[string]any)
			badArgs = !isObject
		}
	}
	t, ok := cat.byName[tc.Name]
	if !ok {
		return fmt.Sprintf("error: there is no tool named %q", tc.Name), rec, nil
	}
	rec["tool"] = t.toolset + "/" + t.tool
	if badArgs {
		return "error: the arguments must be a JSON object", rec, nil
	}
	res, err := c.Tool(ctx, t.toolset, t.tool, args)
	var ne *engine.NodeError
	var rpc *jsonrpc.Error
	switch {
	case err == nil:
	case errors.As(err, &ne) && ne.Code == protocol.CodePermissionDenied:
		rec["denied"] = true
		return "error: permission denied: " + ne.Message, rec, nil
	case ctx.Err() == nil && errors.As(err, &rpc) && !errors.Is(err, toolsets.ErrTimeout):
		// The server refused the call itself (unknown tool, invalid
		// arguments): the model can correct it.
		return "error: " + c.Redact(err.Error()), rec, nil
	default:
		return "", nil, err
	}
	rec["isError"] = res.IsError
	// The text goes to the model provider: no secret of the request
	// (a toolset's header echoed by its server, say) goes with it.
	text := clip(c, c.Redact(resultText(res)))
	if res.IsError {
		return "error: " + orDefault(text, "the tool failed"), rec, nil
	}
	return text, rec, nil
}

// clip bounds what one tool result adds to the conversation, which is held
// in memory and resent with every step: to the per-node output cap.
func clip(c *engine.Call, s string) string {
	limit := c.Limits().MaxOutputBytes
	if limit <= 0 || int64(len(s)) <= limit {
		return s
	}
	return clipText(s, int(limit), "\n[truncated]")
}

// stringList reads an optional array of strings from an evaluated with.
func stringList(w map[string]any, field string) ([]string, error) {
	v, ok := w[field]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := lang.AsArray(v)
	if !ok {
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.%s must be an array of strings, got %s", field, engine.JSONType(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr || s == "" {
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.%s[%d] must be a non-empty string", field, i)
		}
		out[i] = s
	}
	return out, nil
}

// scrubToolSchema returns a tool's input schema with every secret
// replaced; a schema the replacement left no JSON object is offered as
// the schema of any object, since providers require an object there.
func scrubToolSchema(call *engine.Call, schema json.RawMessage) json.RawMessage {
	out := call.RedactJSON(schema)
	if len(schema) > 0 && (len(out) == 0 || out[0] != '{') {
		return json.RawMessage(`{"type":"object"}`)
	}
	return out
}
