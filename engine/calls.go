package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/engine/authorjson"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file holds the calls a step makes outside the runner: a model, a
// toolset, an HTTP endpoint, the sandbox. Each does the whole job, so that
// the rules every such call keeps are kept here once, whichever kind makes
// it: the action is authorized, what is sent of the author's values is
// sized and charged to the memory budget before it is written
// (encode.go, encode_sent.go), and what comes back is scrubbed of the
// execution's secrets at the door, before any node can read it.

// Model makes one model call: it resolves role in the execution's model
// table (falling back to general), authorizes model.invoke on it (every
// call, as each is a side effect), charges what the SDK holds of req while
// writing it, sends it and counts the usage. Every text of the reply is
// scrubbed. A failure is MODEL_ERROR (or the read cap's code); a call that
// ended with ctx returns ctx's error for the scheduler to name.
func (c *Call) Model(ctx context.Context, role string, req models.Request) (*models.Response, error) {
	svc := c.services()
	entry, ok := svc.Models.Lookup(role)
	if !ok {
		return nil, Errorf(protocol.CodeModelError, "no model for role %q and no %q role to fall back to", role, models.GeneralRole)
	}
	if err := c.Authorize(ctx, protocol.ActionModelInvoke, role); err != nil {
		return nil, err
	}
	provider, err := svc.Clients.Provider(ctx, entry)
	if err != nil {
		return nil, modelError(ctx, err)
	}
	// What the SDK writes of the request is charged before it writes it
	// (encode_sent.go), held until the call returns.
	sent, err := c.r.chargeAuthor("the model request (as its SDK holds it while writing it)", modelRequestHeld*modelRequestSize(req))
	if err != nil {
		return nil, err
	}
	defer sent.release()
	c.usage().modelCalls.Add(1)
	req.Read = svc.ReplyLimit()
	res, err := provider.Complete(ctx, req)
	if err != nil {
		return nil, modelError(ctx, err)
	}
	c.usage().inputTokens.Add(res.Usage.InputTokens)
	c.usage().outputTokens.Add(res.Usage.OutputTokens)
	// Scrubbed at the door: a model that repeats a secret it was shown
	// (in a prompt built from an echo, say) hands it to no node.
	// Every text of the reply, not only its content: a server can put
	// what it was sent (the API key) in the model it names or its finish
	// reason as well, and both are node output.
	sc := c.scrub()
	res.Text = sc.String(res.Text)
	res.Model = sc.String(res.Model)
	res.FinishReason = sc.String(res.FinishReason)
	for i, tc := range res.ToolCalls {
		res.ToolCalls[i].ID = sc.String(tc.ID)
		res.ToolCalls[i].Name = sc.String(tc.Name)
		res.ToolCalls[i].Arguments = sc.Raw(tc.Arguments)
	}
	return res, nil
}

// modelError turns a provider failure into MODEL_ERROR "<provider>
// <status>: <message>". A call that ended with its context is left to the
// scheduler, which knows a node timeout from the deadline or a
// cancellation. models.Error messages never carry the entry's key or
// headers; the engine's redactor still runs over every message.
func modelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if ne := readLimitError(err); ne != nil {
		return ne
	}
	var me *models.Error
	if errors.As(err, &me) {
		// "openai 404 Not Found from https://host/chat/completions",
		// "openai 500 from https://host/v1/chat/completions: overloaded".
		head, msg := me.Provider, me.Message
		if me.Status != 0 {
			head = fmt.Sprintf("%s %d", me.Provider, me.Status)
			if msg == http.StatusText(me.Status) {
				head, msg = head+" "+msg, ""
			}
		}
		if me.URL != "" {
			head += " from " + me.URL
		}
		if msg != "" {
			head += ": " + msg
		}
		return &NodeError{Code: protocol.CodeModelError, Message: head}
	}
	return &NodeError{Code: protocol.CodeModelError, Message: err.Error()}
}

// readLimitError maps a read that crossed a cap to the node's error:
// OUTPUT_TOO_LARGE for one reply, LIMIT_EXCEEDED for the replies read at
// once; nil when err is no such failure.
func readLimitError(err error) *NodeError {
	var rl *egress.ReadLimitError
	if !errors.As(err, &rl) {
		return nil
	}
	code := protocol.CodeOutputTooLarge
	if rl.InFlight {
		code = protocol.CodeLimitExceeded
	}
	return &NodeError{Code: code, Message: err.Error(), Err: err}
}

// Tools lists the tools of the toolset ts of runtime.toolsets, as its
// server names them: TOOL_ERROR for a toolset the request does not define,
// the toolset's failure as Tool maps it. The list is not scrubbed: a step
// that shows it to a model scrubs what it shows (Redact, RedactJSON).
func (c *Call) Tools(ctx context.Context, ts string) ([]toolsets.Tool, error) {
	set := c.services().Tools
	if set == nil || !set.Has(ts) {
		return nil, Errorf(protocol.CodeToolError, "unknown toolset %q: not in runtime.toolsets", ts)
	}
	list, err := set.Tools(ctx, ts)
	if err != nil {
		return nil, toolError(ctx, err)
	}
	return list, nil
}

// Tool authorizes tool.call on "toolset/tool" and calls the tool, only
// one the server listed by its exact name. What the MCP client holds of
// the arguments is charged before it writes them; the result is scrubbed.
// A denial or a consent is returned as Authorize returns it; a toolset
// timeout is TIMEOUT, a read cap LIMIT_EXCEEDED or OUTPUT_TOO_LARGE, any
// other toolset failure TOOL_ERROR (a *NodeError wrapping it).
func (c *Call) Tool(ctx context.Context, ts, tool string, args map[string]any) (*toolsets.Result, error) {
	set := c.services().Tools
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

// HTTP sends req through the execution's guarded egress client
// (engine/egress), which refuses a hop to a host a bound secret of
// req.Bound is not bound to. Every hop is authorized (http.request on its
// host) before it is sent. Before anything is sent, the URL with its query
// escaped is charged as net/http holds it, and a body that is not a string
// or bytes is sized, charged and encoded once as JSON; both are held until
// the request is done. The response is returned as egress read it: the
// caller scrubs what it passes on (Redact, RedactValue). A step that
// evaluated req from secrets calls LearnSecrets first.
func (c *Call) HTTP(ctx context.Context, req *egress.Request) (*egress.Response, error) {
	req.Authorize = func(ctx context.Context, host string) error {
		return c.Authorize(ctx, protocol.ActionHTTPRequest, host)
	}
	// The URL with its query escaped is the author's value too (a control
	// character is three bytes): charged as net/http holds it
	// (encode_sent.go), held until the request is done.
	sentURL, err := c.r.chargeAuthor("with.url and with.query (as the request holds them once escaped)", urlHeld*authorjson.QuerySize(req.URL, req.Query))
	if err != nil {
		return nil, err
	}
	defer sentURL.release()

	// A JSON body is the author's value: sized, charged and encoded once
	// (encodeAuthor), held until the request is done.
	switch req.Body.(type) {
	case nil, string, []byte:
	default:
		body, err := c.r.encodeAuthor(ctx, "with.body", req.Body, c.Limits().MemoryBudget)
		if err != nil {
			return nil, err
		}
		defer body.release()
		req.Body = json.RawMessage(body.B)
	}
	return c.services().HTTP.Do(ctx, req)
}

// Code runs a code node's function body over input in a sandbox worker
// (Services.Code) and returns its return value, decoded. input is sized,
// charged and encoded once, at most maxCodeMemoryBytes, and held until the
// worker has answered. The worker's console lines go in the attempt's
// events. A step that calls Code implements WorkTimed: the node's
// timeoutMs counts from when a worker starts on it, and running past it
// is TIMEOUT. A failure of the code itself is the worker's
// *sandbox.Error, for the step to name; a return value nested past
// maxDepth is LIMIT_EXCEEDED; ctx's error when ctx ended first.
func (c *Call) Code(ctx context.Context, code string, input any) (any, error) {
	l := c.Limits()
	// Sized, charged and encoded once (encodeAuthor), held until the
	// worker has answered: the frame is written from these bytes. More
	// than the worker may hold could never be parsed there.
	in, err := c.r.encodeAuthor(ctx, "with.input", input, l.MaxCodeMemory)
	if err != nil {
		return nil, err
	}
	defer in.release()
	// The reply is charged as its frame announces it, before it is read,
	// and held until it is decoded: the value the step returns is charged
	// as the node's output.
	opts := c.sandboxOptions()
	var reply *authorBytes
	opts.Reserve = func(frame int64) (err error) {
		reply, err = c.r.chargeAuthor("the code's return value and console lines", 2*frame)
		return err
	}
	defer func() { reply.release() }()
	rep, err := c.codeRunner().EvalWith(ctx, sandbox.Request{
		Code: code, Input: in.B, MaxOutputBytes: l.MaxOutputBytes, MaxLogBytes: l.MaxCodeLogBytes,
	}, opts)
	var se *sandbox.Error
	switch {
	case errors.As(err, &se) && se.Kind == sandbox.KindTimeout:
		return nil, Errorf(protocol.CodeTimeout, "node timed out: the code ran for its timeoutMs (%d)", c.n.timeout.Milliseconds())
	case err != nil:
		return nil, err
	}
	c.logs = rep.Logs
	if err := protocol.CheckStructure(rep.Output, l.MaxDepth); err != nil {
		return nil, &NodeError{Code: protocol.CodeLimitExceeded, Message: "the return value nests deeper than maxDepth", Err: err, logs: rep.Logs}
	}
	out, err := decodeJSON(rep.Output)
	if err != nil {
		return nil, &NodeError{Code: protocol.CodeFailed, Message: "the sandbox returned malformed JSON", Err: err, logs: rep.Logs}
	}
	return out, nil
}
