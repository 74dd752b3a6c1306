//go:build !noanthropic

package models

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/runnerd/lambda-runner/protocol"
)

func init() {
	register(ProviderAnthropic, func(_ context.Context, c *Clients, m protocol.Model) (Provider, error) {
		return c.anthropic(m), nil
	})
}

// anthropicRequestTimeout is the per-attempt timeout given to the SDK. Set
// explicitly, it stops the SDK from refusing a large max_tokens without
// streaming; the caller's context deadline is the real bound.
const anthropicRequestTimeout = 15 * time.Minute

// anthropicProvider speaks Anthropic's Messages API.
type anthropicProvider struct {
	settings
	messages anthropic.MessageService
	scrub    scrubber
}

// anthropic builds the provider for m. WithoutEnvironmentDefaults keeps the
// SDK from reading ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles and
// custom headers from the environment: an entry with a custom baseUrl and no
// apiKey must not send the deployment's credentials there.
func (c *Clients) anthropic(m protocol.Model) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(c.httpClient()),
		option.WithMaxRetries(c.retries()),
		option.WithMiddleware(retryGate),
	}
	if m.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(m.BaseURL))
	}
	if m.APIKey != "" {
		opts = append(opts, option.WithAPIKey(m.APIKey))
	}
	for k, v := range m.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	client := anthropic.NewClient(opts...)
	return &anthropicProvider{
		settings: settings{model: m},
		messages: client.Messages,
		scrub:    newScrubber(m),
	}
}

// Complete implements Provider.
//
// The Messages API version the SDK speaks has no sampling temperature, so
// a temperature (the request's or the entry's) is not sent.
func (p *anthropicProvider) Complete(ctx context.Context, req Request) (*Response, error) {
	req.Read = req.Read.Costed(anthropicReplyCost)
	defer req.Read.Release()
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	var httpRes *http.Response
	res, err := p.messages.New(ctx, params,
		option.WithRequestTimeout(anthropicRequestTimeout),
		option.WithResponseInto(&httpRes),
		option.WithMiddleware(limitBody(req.Read)))
	if e := readLimitError(ProviderAnthropic, req); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, p.error(ctx, err, httpRes)
	}
	if !res.JSON.Content.Valid() {
		return nil, p.scrub.newError(ProviderAnthropic, 0, "malformed response: no content")
	}
	out := &Response{
		FinishReason: string(res.StopReason),
		Model:        string(res.Model),
		Usage: Usage{
			InputTokens:  res.Usage.InputTokens,
			OutputTokens: res.Usage.OutputTokens,
		},
	}
	if out.Model == "" {
		out.Model = p.model.Model
	}
	var text strings.Builder
	for _, block := range res.Content {
		switch block.Type {
		case "text":
			text.WriteString(block.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{
				ID:        block.ID,
				Name:      block.Name,
				Arguments: arguments(block.Input),
			})
		}
	}
	out.Text = text.String()
	return out, nil
}

// params maps req to a Messages API request.
func (p *anthropicProvider) params(req Request) (anthropic.MessageNewParams, error) {
	if err := validateRequest(req); err != nil {
		return anthropic.MessageNewParams{}, err
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.model.Model),
		MaxTokens: DefaultAnthropicMaxTokens,
	}
	if n := p.maxTokens(req); n > 0 {
		params.MaxTokens = int64(n)
	}
	// Anthropic's native structured output rejects schemas that leave
	// additionalProperties open, so the schema goes in the instructions.
	if system := systemWithSchema(req.System, req.JSONSchema); system != "" {
		params.System = []anthropic.TextBlockParam{{Text: system}}
	}
	var turns []turn[anthropic.ContentBlockParamUnion]
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			if m.Content != "" {
				turns = appendTurn(turns, false, anthropic.NewTextBlock(m.Content))
			}
		case RoleTool:
			result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.IsError {
				result.IsError = anthropic.Bool(true)
			}
			if m.Content != "" {
				result.Content = []anthropic.ToolResultBlockParamContentUnion{
					{OfText: &anthropic.TextBlockParam{Text: m.Content}},
				}
			}
			turns = appendTurn(turns, false, anthropic.ContentBlockParamUnion{OfToolResult: &result})
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, arguments(c.Arguments), c.Name))
			}
			turns = appendTurn(turns, true, blocks...)
		}
	}
	for _, t := range turns {
		if t.assistant {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(t.blocks...))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(t.blocks...))
		}
	}
	for _, t := range req.Tools {
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: anthropicSchema(toolSchema(t.InputSchema))}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params, nil
}

// anthropicSchema spreads a JSON Schema over the SDK's input schema type,
// whose extra fields carry every keyword but properties and required.
func anthropicSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	var s anthropic.ToolInputSchemaParam
	extra := map[string]any{}
	for k, v := range schema {
		switch k {
		case "type":
			// Always "object", which the SDK sends itself.
		case "properties":
			s.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if name, ok := r.(string); ok {
						s.Required = append(s.Required, name)
					}
				}
			}
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		s.ExtraFields = extra
	}
	return s
}

// error maps an SDK failure to an *Error.
func (p *anthropicProvider) error(ctx context.Context, err error, httpRes *http.Response) error {
	if e := contextError(ctx, ProviderAnthropic, err); e != nil {
		return e
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = apiErr.RawJSON()
		}
		u := requestURL(err, apiErr.Response)
		if u == nil && apiErr.Request != nil {
			u = apiErr.Request.URL
		}
		return p.scrub.at(p.scrub.newError(ProviderAnthropic, apiErr.StatusCode, orStatusText(msg, apiErr.StatusCode)), u)
	}
	u := requestURL(err, httpRes)
	if httpRes != nil && httpRes.StatusCode >= 400 {
		return p.scrub.at(p.scrub.newError(ProviderAnthropic, httpRes.StatusCode, orStatusText(bodyText(httpRes), httpRes.StatusCode)), u)
	}
	if httpRes != nil {
		return p.scrub.at(p.scrub.newError(ProviderAnthropic, 0, "malformed response: "+err.Error()), u)
	}
	return p.scrub.at(p.scrub.newError(ProviderAnthropic, 0, "request failed: "+transportText(err)), u)
}
