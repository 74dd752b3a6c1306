package nodes

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/engine"
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

// messageType is one message of a conversation (with.messages).
var messageType = document.Type{Kind: document.Object, Fields: []document.Field{
	{Name: "role", Type: document.Type{Kind: document.Enum, Enum: []string{"user", "assistant"}}, Required: true, Doc: "Who said it."},
	{Name: "content", Type: document.Text, Required: true, Doc: "What was said."},
}}

// modelFields are the members model and agent nodes share.
var modelFields = []document.Field{
	{Name: "role", Type: document.Name, Doc: "The model role, in runtime.models."},
	{Name: "system", Type: document.Text, Doc: "The system prompt."},
	{Name: "prompt", Type: document.Text, Doc: "The user prompt."},
	{Name: "messages", Type: document.Type{Kind: document.Array, Items: &messageType, Template: true, TemplateFirst: true, Def: "messages"}, Doc: "The conversation so far."},
	{Name: "temperature", Type: document.NumberOrTemplate, Doc: "The sampling temperature."},
	{Name: "maxTokens", Type: document.IntOrTemplate, Doc: "The most tokens the reply may have."},
}

var modelWith = document.With{Required: true, Doc: "One call to a model.", Fields: append(slices.Clip(modelFields),
	document.Field{Name: "json", Type: document.Type{Kind: document.ObjectOrBool}, Literal: true, Doc: "JSON Schema the reply must satisfy; the reply is parsed into output.json."},
)}

func (*modelKind) With() *document.With { return &modelWith }

type modelStep struct {
	schema    *schema.Schema  // nil without with.json
	schemaRaw json.RawMessage // what the provider is sent
}

func (*modelKind) Prepare(c *engine.Compiler) engine.Step {
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
func prepareModelFields(c *engine.Compiler) {
	role, literal := c.Literal("role")
	if _, ok := c.Raw("role"); !ok {
		role, literal = models.GeneralRole, true
	}
	if literal {
		if ok, where := c.LookupRole(role); !ok {
			c.RuntimeErrorf("role", "node %q: no model for role %q and no %q role to fall back to in %s",
				c.NodeID(), role, models.GeneralRole, where)
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
func readModelNumbers(f *engine.Fields) (temperature *float64, maxTokens int) {
	if t, ok := f.Float("temperature", 0, 2); ok {
		temperature = &t
	}
	maxTokens, _ = f.Int("maxTokens", 0, math.MaxInt)
	return temperature, maxTokens
}

// prepareJSONSchema compiles with.json. It returns nils for json: false.
func prepareJSONSchema(c *engine.Compiler, raw any) (*schema.Schema, json.RawMessage) {
	if b, ok := raw.(bool); ok {
		if !b {
			return nil, nil
		}
		// Any JSON value: the providers want an object schema.
		raw = map[string]any{}
	}
	return c.JSONSchema("json", raw)
}

func (s *modelStep) Run(ctx context.Context, call *engine.Call) (any, error) {
	role, req, err := modelRequest(call)
	if err != nil {
		return nil, err
	}
	req.JSONSchema = s.schemaRaw
	res, err := call.Model(ctx, role, req)
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
		return nil, engine.Errorf(protocol.CodeOutputTooLarge, "the model's reply would decode to about %d bytes, over the per-node cap of %d bytes", w, maxDecoded)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, engine.Errorf(protocol.CodeModelError, "the model's reply is not valid JSON: %v", err)
	}
	if err := engine.MatchSchema("json", sch, v); err != nil {
		return nil, engine.Errorf(protocol.CodeModelError, "the model's reply does not match with.json: %s", err)
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
func modelRequest(call *engine.Call) (string, models.Request, error) {
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
		return "", req, engine.Errorf(protocol.CodeExpressionError, "with.prompt and with.messages are both empty: the model has nothing to answer")
	}
	return role, req, nil
}

// messagesField reads with.messages: [{role: user|assistant, content}].
func messagesField(v any) ([]models.Message, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := lang.AsArray(v)
	if !ok {
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.messages must be an array, got %s", engine.JSONType(v))
	}
	out := make([]models.Message, 0, len(list)+1)
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.messages[%d] must be an object {role, content}, got %s", i, engine.JSONType(e))
		}
		role, _ := m["role"].(string)
		if role != models.RoleUser && role != models.RoleAssistant {
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.messages[%d].role must be \"user\" or \"assistant\"", i)
		}
		content, ok := m["content"].(string)
		if !ok {
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.messages[%d].content must be a string, got %s", i, engine.JSONType(m["content"]))
		}
		out = append(out, models.Message{Role: role, Content: content})
	}
	return out, nil
}
