// Package models adapts the model providers a workflow can call — OpenAI's
// Chat Completions API (and the servers compatible with it), Anthropic's
// Messages API and Amazon Bedrock's Converse API — to one request and reply
// shape, using each provider's official SDK.
//
// A [Table] maps workflow roles to model entries; [Clients] turns an entry
// into a [Provider]. Every provider failure is an [*Error], whose message
// never carries the entry's API key or header values.
package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// Provider names, as they appear in a model entry.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderBedrock   = "bedrock"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// DefaultAnthropicMaxTokens is the max_tokens sent to Anthropic when neither
// the request nor the model entry sets one: the Messages API requires it.
const DefaultAnthropicMaxTokens = 1024

// Message is one turn of a conversation.
type Message struct {
	// Role is RoleUser, RoleAssistant or RoleTool.
	Role string
	// Content is the text of the turn; for a tool turn, the tool's result.
	Content string
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
	// ToolCallID names the call a tool turn answers.
	ToolCallID string
	// IsError marks a tool turn whose tool failed. Anthropic and Bedrock
	// are told so; Chat Completions has no such flag and gets the content.
	IsError bool
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments; empty means an
	// object with any properties.
	InputSchema json.RawMessage
}

// ToolCall is the model's request to call a tool.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is a JSON value, normally an object.
	Arguments json.RawMessage
}

// Request is one model call.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
	// Temperature and MaxTokens override the model entry's values when set
	// (non-nil, positive).
	Temperature *float64
	MaxTokens   int
	// JSONSchema, when set, asks for a JSON reply matching the schema: with
	// OpenAI as native structured output (response_format json_schema), with
	// Anthropic and Bedrock as an instruction appended to the system prompt.
	JSONSchema json.RawMessage
	// Read bounds the reply while the SDK reads it (every attempt's body
	// counts); nil means no bound. Complete makes it costed with its SDK's
	// Cost and releases it before returning, so each reply is bounded by
	// what it decodes to, and its in-flight parents by what the SDK holds
	// while it decodes. A call whose reply crosses it fails with an *Error
	// that unwraps to the *egress.ReadLimitError.
	Read *egress.ReadLimit
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Response is a model's reply.
type Response struct {
	// Text is the reply's text blocks, concatenated.
	Text      string
	ToolCalls []ToolCall
	// FinishReason is the provider's own value: OpenAI's finish_reason
	// ("stop", "length", "tool_calls", …), Anthropic's stop_reason
	// ("end_turn", "max_tokens", "tool_use", …) or Bedrock's stopReason
	// ("end_turn", "max_tokens", "tool_use", …).
	FinishReason string
	// Model is the model that answered, as the provider reports it (the
	// entry's model for Bedrock, which does not report one).
	Model string
	Usage Usage
}

// Provider is one configured model.
type Provider interface {
	// Complete sends req and returns the reply. A failure of the provider is
	// an [*Error]; an invalid req is a plain error.
	Complete(ctx context.Context, req Request) (*Response, error)
}

// Error is a provider failure.
type Error struct {
	// Provider is "openai", "anthropic" or "bedrock".
	Provider string
	// Status is the HTTP status of the provider's error reply; 0 when there
	// was none (transport failure, cancellation, deadline, malformed reply).
	Status int
	// Message is for people: the provider's own error message where it gave
	// one. It never contains the entry's API key or header values.
	Message string
	// URL is where the failed call went: scheme, host and path, never a
	// userinfo, query or fragment, the entry's secrets redacted. It is ""
	// when the call ended before a request was made.
	URL string

	// cause is only ever a context error, so that errors.Is can tell a
	// deadline from a provider failure, or the *egress.ReadLimitError of
	// a reply too large; SDK errors are not kept because their text may
	// carry what Message has had scrubbed.
	cause error
}

// Error implements error.
func (e *Error) Error() string {
	from := ""
	if e.URL != "" {
		from = " from " + e.URL
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d%s: %s", e.Provider, e.Status, from, e.Message)
	}
	return e.Provider + from + ": " + e.Message
}

// Unwrap returns [context.Canceled] or [context.DeadlineExceeded] when the
// call ended because its context did, the *egress.ReadLimitError when the
// reply crossed Request.Read, and nil otherwise.
func (e *Error) Unwrap() error { return e.cause }

// maxMessageLen bounds Error.Message: an error page can be megabytes of HTML.
const maxMessageLen = 1000

// scrubber removes a model entry's secrets from text that came back from a
// server or an SDK, which may echo request headers.
type scrubber struct{ r *redact.Redactor }

// newScrubber collects the secrets of m: its API key, its header values and
// the password of its base URL. The redactor knows their escaped forms and
// the credential part of "Bearer …" values.
func newScrubber(m protocol.Model) scrubber {
	raw := []string{strings.TrimSpace(m.APIKey)}
	for _, v := range m.Headers {
		raw = append(raw, strings.TrimSpace(v))
	}
	if u, err := url.Parse(m.BaseURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			raw = append(raw, p, u.User.String())
		}
	}
	return scrubber{redact.New(raw...)}
}

// scrub returns msg without any secret, trimmed and bounded.
func (s scrubber) scrub(msg string) string { return s.r.Message(msg, maxMessageLen) }

// newError builds the *Error of a failed call.
func (s scrubber) newError(provider string, status int, msg string) *Error {
	return &Error{Provider: provider, Status: status, Message: s.scrub(msg)}
}

// at records on e where its call went, u: a base URL without its /v1 is
// found at once when the message names the URL the 404 came from. Only
// the scheme, host and path are kept: the query of a URL the SDK built is
// not the author's to see, and a userinfo is a credential.
func (s scrubber) at(e *Error, u *url.URL) *Error {
	if u != nil && u.Host != "" {
		e.URL = s.scrub((&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String())
	}
	return e
}

// requestURL is the URL of the request behind res, else of the transport
// failure err; nil when neither names one.
func requestURL(err error, res *http.Response) *url.URL {
	if res != nil && res.Request != nil {
		return res.Request.URL
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u
		}
	}
	return nil
}

// transportText is what a failed send says, without the URL that
// net/http quotes whole (the error's URL says where).
func transportText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err.Error()
	}
	return err.Error()
}

// readLimitError returns the *Error of a call whose reply crossed its read
// limit, nil if it did not. It is asked before anything else: the SDKs
// report the failed read in their own words, if at all.
func readLimitError(provider string, req Request) *Error {
	err := req.Read.Err()
	if err == nil {
		return nil
	}
	return &Error{Provider: provider, Message: "reply too large: " + err.Error(), cause: err}
}

// What each SDK holds on the heap while it decodes a reply, at most: per
// byte (the body read whole, the strings decoded from it, the raw text
// the SDKs keep of each field) and per JSON value (a structure of the
// SDK's for each element of an array it decodes into its types, a
// thousand bytes and more for an empty object). TestReplyCost measures
// them over replies shaped to make each SDK hold the most and fails when
// an SDK holds more; they are a quarter or more above what it measured. A
// megabyte of empty choices made openai-go hold 320 MB.
var (
	openAIReplyCost    = egress.Cost{PerByte: 14, PerValue: 1500}
	anthropicReplyCost = egress.Cost{PerByte: 8, PerValue: 1400}
	bedrockReplyCost   = egress.Cost{PerByte: 8, PerValue: 300}
)

// MaxReplyCostPerByte is the most any provider's reply costs a byte of its
// text: a reply as large as its limit can always be read alone when the
// in-flight limit is at least this times the reply limit.
const MaxReplyCostPerByte = 14

// limitBody is an OpenAI/Anthropic SDK middleware that bounds the reply's
// body by the request's read limit while the SDK reads it.
func limitBody(l *egress.ReadLimit) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if res != nil {
			res.Body = l.Body(res.Body)
		}
		return res, err
	}
}

// contextError returns the *Error of a call whose context ended, or nil if
// err is not about the context. The context itself is checked too because
// an SDK may report its end in its own words.
func contextError(ctx context.Context, provider string, err error) *Error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Error{Provider: provider, Message: "deadline exceeded", cause: context.DeadlineExceeded}
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return &Error{Provider: provider, Message: "cancelled", cause: context.Canceled}
	}
	return nil
}

// settings resolves a call's parameters against its model entry.
type settings struct {
	model protocol.Model
}

// temperature is the request's temperature, else the entry's, else nil.
func (s settings) temperature(req Request) *float64 {
	if req.Temperature != nil {
		return req.Temperature
	}
	return s.model.Temperature
}

// maxTokens is the request's max tokens, else the entry's, else 0 (unset).
func (s settings) maxTokens(req Request) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	if s.model.MaxTokens != nil && *s.model.MaxTokens > 0 {
		return *s.model.MaxTokens
	}
	return 0
}

// validateRequest checks what every adapter relies on, so a bad request
// fails before anything is sent.
func validateRequest(req Request) error {
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
		case RoleAssistant:
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return fmt.Errorf("models: messages[%d].toolCalls[%d]: id and name are required", i, j)
				}
				if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
					return fmt.Errorf("models: messages[%d].toolCalls[%d]: arguments are not valid JSON", i, j)
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("models: messages[%d]: a tool message needs a toolCallId", i)
			}
		default:
			return fmt.Errorf("models: messages[%d]: unknown role %q (want user, assistant or tool)", i, m.Role)
		}
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return fmt.Errorf("models: tools[%d]: name is required", i)
		}
		if len(t.InputSchema) > 0 {
			if _, err := schemaObject(t.InputSchema); err != nil {
				return fmt.Errorf("models: tools[%d] %q: input schema: %w", i, t.Name, err)
			}
		}
	}
	if len(req.JSONSchema) > 0 {
		if _, err := schemaObject(req.JSONSchema); err != nil {
			return fmt.Errorf("models: json schema: %w", err)
		}
	}
	return nil
}

// schemaObject decodes a JSON Schema, which must be an object.
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("must be a JSON object")
	}
	return m, nil
}

// toolSchema is a tool's input schema as an object, defaulting to "any
// object" since every provider requires one.
func toolSchema(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	m, _ := schemaObject(raw) // validated by validateRequest
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	return m
}

// arguments returns a tool call's arguments as JSON, "{}" when empty, since
// providers require an object.
func arguments(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// systemWithSchema appends the JSON instruction for providers without a
// native structured-output mode that takes any schema.
func systemWithSchema(system string, schema json.RawMessage) string {
	if len(schema) == 0 {
		return system
	}
	instruction := "Reply with a single JSON value that matches this JSON Schema, " +
		"and nothing else: no prose, no Markdown code fences.\nJSON Schema:\n" + string(schema)
	if strings.TrimSpace(system) == "" {
		return instruction
	}
	return system + "\n\n" + instruction
}

// turn is a provider-neutral conversation turn for the APIs (Anthropic,
// Bedrock) that carry tool results in user turns and want user and
// assistant turns to alternate.
type turn[B any] struct {
	assistant bool
	blocks    []B
}

// appendTurn adds blocks as a turn, merging them into the previous turn when
// it has the same role: consecutive tool results become one user turn.
func appendTurn[B any](turns []turn[B], assistant bool, blocks ...B) []turn[B] {
	if len(blocks) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
		turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
		return turns
	}
	return append(turns, turn[B]{assistant: assistant, blocks: blocks})
}
