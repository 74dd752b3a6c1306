package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/schema"
	"github.com/runnerd/lambda-runner/protocol"
)

// modelKind calls a model once:
//
//	with: {role, system, prompt | messages[], temperature, maxTokens, json}
//	output: {text, json?, model, finishReason, usage{inputTokens, outputTokens}}
//
// The role is looked up in runtime.models (else the deployment's table),
// falling back to "general". with.json is a JSON Schema: the reply is asked
// for as JSON, parsed into output.json and validated against the schema; a
// reply that is not JSON or does not match fails the node with MODEL_ERROR.
// json: true asks for any JSON value; json: false is the same as no json.
type modelKind struct{}

type modelStep struct {
	schema    *schema.Schema  // nil without with.json
	schemaRaw json.RawMessage // what the provider is sent
}

func (modelKind) Prepare(c *Compiler) Step {
	c.With("json")
	prepareModelFields(c)
	s := &modelStep{}
	if raw, ok := c.Raw("json"); ok {
		s.schema, s.schemaRaw = prepareJSONSchema(c, raw)
	}
	return s
}

// prepareModelFields checks the with fields model and agent nodes share: a
// literal role (or the default, general) must resolve in the execution's
// model table and is declared for preflight; a prompt or messages is
// required; literal numbers must be in range.
func prepareModelFields(c *Compiler) {
	role, literal := c.Literal("role")
	if _, ok := c.Raw("role"); !ok {
		role, literal = models.GeneralRole, true
	}
	if literal {
		if !c.hasRole(role) {
			c.RuntimeErrorf("role", "node %q: no model for role %q and no %q role to fall back to in %s%s",
				c.NodeID(), role, models.GeneralRole, c.services().modelsFrom, c.missingHint("roles", role, c.services().models.Roles))
		} else {
			c.StaticAction(protocol.ActionModelInvoke, role)
		}
	}
	_, prompt := c.Raw("prompt")
	_, messages := c.Raw("messages")
	if !prompt && !messages {
		c.Errorf("", "node %q: needs a prompt or messages", c.NodeID())
	}
	readModelNumbers(c.Fields())
}

// readModelNumbers reads the numeric model fields, literals before
// acceptance and evaluated values at run time.
func readModelNumbers(f *Fields) (temperature *float64, maxTokens int) {
	if t, ok := f.Float("temperature", 0, 2); ok {
		temperature = &t
	}
	maxTokens, _ = f.Int("maxTokens", 0, math.MaxInt)
	return temperature, maxTokens
}

// prepareJSONSchema compiles with.json. It returns nils for json: false.
func prepareJSONSchema(c *Compiler, raw any) (*schema.Schema, json.RawMessage) {
	if b, ok := raw.(bool); ok {
		if !b {
			return nil, nil
		}
		// Any JSON value: the providers want an object schema.
		raw = map[string]any{}
	}
	b, err := json.Marshal(raw)
	if err == nil && !c.p.schemaWithinLimits(c.Path("json"), b) {
		return nil, nil
	}
	var sch *schema.Schema
	if err == nil {
		sch, err = compileSchemaText(b)
	}
	if err != nil {
		document.SchemaErrors(c.Path("json"), err, c.p.d)
		return nil, nil
	}
	return sch, b
}

func (s *modelStep) Run(ctx context.Context, call *Call) (any, error) {
	role, req, err := modelRequest(call)
	if err != nil {
		return nil, err
	}
	req.JSONSchema = s.schemaRaw
	res, err := call.invokeModel(ctx, role, req)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"text":         res.Text,
		"model":        res.Model,
		"finishReason": res.FinishReason,
		"usage":        usageOutput(res.Usage),
	}
	if s.schema != nil {
		v, err := parseReply(s.schema, res.Text, call.Limits().MaxOutputBytes)
		if err != nil {
			return nil, err
		}
		out["json"] = v
	}
	return out, nil
}

func usageOutput(u models.Usage) map[string]any {
	return map[string]any{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens}
}

// parseReply decodes a JSON reply and checks it against the schema. A
// reply wrapped in a Markdown code fence, which models add despite being
// told not to, is unwrapped first.
func parseReply(sch *schema.Schema, text string, maxDecoded int64) (any, error) {
	raw := []byte(unfence(text))
	// The reply's bytes were bounded as they were read; what they decode
	// to is bounded before they are.
	if w := jsonweight.Of(raw); maxDecoded > 0 && w > maxDecoded {
		return nil, Errorf(protocol.CodeOutputTooLarge, "the model's reply would decode to about %d bytes, over the per-node cap of %d bytes", w, maxDecoded)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, Errorf(protocol.CodeModelError, "the model's reply is not valid JSON: %v", err)
	}
	if d := (&document.Problems{}); !document.SchemaDetails("json", sch, v, d, &lang.Hints{}) {
		return nil, Errorf(protocol.CodeModelError, "the model's reply does not match with.json: %s", d.Err().Error())
	}
	return v, nil
}

// unfence strips surrounding whitespace and one ``` or ```json fence.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
		body = body[nl+1:] // the info string: json, JSON, …
	}
	return strings.TrimSpace(body)
}

// modelRequest reads the evaluated model fields of a model or agent node.
// The role defaults to general; prompt, when set, is the last user turn
// after messages.
func modelRequest(call *Call) (string, models.Request, error) {
	var req models.Request
	f := call.Fields()
	role, _ := f.String("role")
	if role == "" {
		role = models.GeneralRole
	}
	req.System, _ = f.String("system")
	prompt, _ := f.String("prompt")
	req.Temperature, req.MaxTokens = readModelNumbers(f)
	if err := f.Err(); err != nil {
		return "", req, err
	}
	var err error
	if req.Messages, err = messagesField(call.WithMap()["messages"]); err != nil {
		return "", req, err
	}
	if prompt != "" {
		req.Messages = append(req.Messages, models.Message{Role: models.RoleUser, Content: prompt})
	}
	if len(req.Messages) == 0 {
		return "", req, Errorf(protocol.CodeExpressionError, "with.prompt and with.messages are both empty: the model has nothing to answer")
	}
	return role, req, nil
}

// roleFallback is what a model or agent node's node.started says of its
// role when the model table answers it with the general entry, nil
// otherwise: a role missing from the table is not an error, so without
// this the author would never learn that the node ran on another model.
// with is the node's evaluated with.
func roleFallback(call *Call, with any) *protocol.RoleFallback {
	if call.Type != "model" && call.Type != "agent" {
		return nil
	}
	m, _ := with.(map[string]any)
	role, _ := m["role"].(string)
	if role == "" || !call.services().models.FallsBack(role) {
		return nil
	}
	// The role is the author's, evaluated from any value: it is
	// redacted as every text of an event is.
	return &protocol.RoleFallback{Requested: call.r.x.redact.String(role), Used: models.GeneralRole}
}

// messagesField reads with.messages: [{role: user|assistant, content}].
func messagesField(v any) ([]models.Message, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := asArray(v)
	if !ok {
		return nil, Errorf(protocol.CodeExpressionError, "with.messages must be an array, got %s", jsonKind(v))
	}
	out := make([]models.Message, 0, len(list)+1)
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, Errorf(protocol.CodeExpressionError, "with.messages[%d] must be an object {role, content}, got %s", i, jsonKind(e))
		}
		role, _ := m["role"].(string)
		if role != models.RoleUser && role != models.RoleAssistant {
			return nil, Errorf(protocol.CodeExpressionError, "with.messages[%d].role must be \"user\" or \"assistant\"", i)
		}
		content, ok := m["content"].(string)
		if !ok {
			return nil, Errorf(protocol.CodeExpressionError, "with.messages[%d].content must be a string, got %s", i, jsonKind(m["content"]))
		}
		out = append(out, models.Message{Role: role, Content: content})
	}
	return out, nil
}

// asFloat accepts a number as JSON decodes it or as expr-lang computes it.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// invokeModel makes one model call for the node: it resolves the role,
// authorizes model.invoke on it (every call, as each is a side effect),
// sends the request and counts the usage.
func (c *Call) invokeModel(ctx context.Context, role string, req models.Request) (*models.Response, error) {
	svc := c.services()
	entry, ok := svc.models.Lookup(role)
	if !ok {
		return nil, Errorf(protocol.CodeModelError, "no model for role %q and no %q role to fall back to", role, models.GeneralRole)
	}
	if err := c.Authorize(ctx, protocol.ActionModelInvoke, role); err != nil {
		return nil, err
	}
	provider, err := svc.clients.Provider(ctx, entry)
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
	req.Read = svc.replyLimit()
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
		res.ToolCalls[i].Arguments = sc.raw(tc.Arguments)
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
