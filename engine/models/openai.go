//go:build !noopenai

package models

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/runnerd/lambda-runner/protocol"
)

func init() {
	register(ProviderOpenAI, func(_ context.Context, c *Clients, m protocol.Model) (Provider, error) {
		return c.openAI(m), nil
	})
}

// openAIDefaultHost is the host of the OpenAI API itself.
const openAIDefaultHost = "api.openai.com"

// openAIProvider speaks the Chat Completions API, to OpenAI or to any
// server compatible with it.
type openAIProvider struct {
	settings
	chat  openai.ChatCompletionService
	scrub scrubber
	// legacyMaxTokens sends max_tokens instead of max_completion_tokens.
	legacyMaxTokens bool
}

// openAI builds the provider for m. The service is made directly rather
// than through openai.NewClient, which would read OPENAI_API_KEY,
// OPENAI_BASE_URL and more from the environment: an entry with a custom
// baseUrl and no apiKey must not send the deployment's key there.
func (c *Clients) openAI(m protocol.Model) *openAIProvider {
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(c.httpClient()),
		option.WithMaxRetries(c.retries()),
		option.WithMiddleware(retryGate),
	}
	legacy := false
	if m.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(m.BaseURL))
		if u, err := url.Parse(m.BaseURL); err == nil && !strings.EqualFold(u.Hostname(), openAIDefaultHost) {
			legacy = true
		}
	}
	if m.APIKey != "" {
		opts = append(opts, option.WithAPIKey(m.APIKey))
	}
	for k, v := range m.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &openAIProvider{
		settings:        settings{model: m},
		chat:            openai.NewChatCompletionService(opts...),
		scrub:           newScrubber(m),
		legacyMaxTokens: legacy,
	}
}

// Complete implements Provider.
func (p *openAIProvider) Complete(ctx context.Context, req Request) (*Response, error) {
	req.Read = req.Read.Costed(openAIReplyCost)
	defer req.Read.Release()
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	var httpRes *http.Response
	res, err := p.chat.New(ctx, params, option.WithResponseInto(&httpRes), option.WithMiddleware(limitBody(req.Read)))
	if e := readLimitError(ProviderOpenAI, req); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, p.error(ctx, err, httpRes)
	}
	if len(res.Choices) == 0 {
		return nil, p.scrub.newError(ProviderOpenAI, 0, "malformed response: no choices")
	}
	choice := res.Choices[0]
	out := &Response{
		Text:         choice.Message.Content,
		FinishReason: choice.FinishReason,
		Model:        res.Model,
		Usage: Usage{
			InputTokens:  res.Usage.PromptTokens,
			OutputTokens: res.Usage.CompletionTokens,
		},
	}
	if out.Model == "" {
		out.Model = p.model.Model
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered, so never called
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: arguments(json.RawMessage(tc.Function.Arguments)),
		})
	}
	return out, nil
}

// params maps req to a Chat Completions request.
func (p *openAIProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	if err := validateRequest(req); err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.model.Model)}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      c.Name,
							Arguments: string(arguments(c.Arguments)),
						},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{
			Name:       t.Name,
			Parameters: shared.FunctionParameters(toolSchema(t.InputSchema)),
		}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if t := p.temperature(req); t != nil {
		params.Temperature = openai.Float(*t)
	}
	if n := p.maxTokens(req); n > 0 {
		// OpenAI's reasoning models reject max_tokens, while compatible
		// servers do not all know its replacement.
		if p.legacyMaxTokens {
			params.MaxTokens = openai.Int(int64(n))
		} else {
			params.MaxCompletionTokens = openai.Int(int64(n))
		}
	}
	if len(req.JSONSchema) > 0 {
		// Not strict: strict mode rejects schemas that leave
		// additionalProperties open or properties optional, which
		// workflow schemas commonly do.
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   "output",
					Schema: req.JSONSchema,
				},
			},
		}
	}
	return params, nil
}

// error maps an SDK failure to an *Error. httpRes is the last reply, if
// any: the SDK returns a parse error rather than an *openai.Error when an
// error reply's body is not JSON.
func (p *openAIProvider) error(ctx context.Context, err error, httpRes *http.Response) error {
	if e := contextError(ctx, ProviderOpenAI, err); e != nil {
		return e
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = apiErr.RawJSON()
		}
		if msg == "" {
			msg = bodyText(apiErr.Response)
		}
		u := requestURL(err, apiErr.Response)
		if u == nil && apiErr.Request != nil {
			u = apiErr.Request.URL
		}
		return p.scrub.at(p.scrub.newError(ProviderOpenAI, apiErr.StatusCode, orStatusText(msg, apiErr.StatusCode)), u)
	}
	u := requestURL(err, httpRes)
	if httpRes != nil && httpRes.StatusCode >= 400 {
		return p.scrub.at(p.scrub.newError(ProviderOpenAI, httpRes.StatusCode, orStatusText(bodyText(httpRes), httpRes.StatusCode)), u)
	}
	if httpRes != nil {
		return p.scrub.at(p.scrub.newError(ProviderOpenAI, 0, "malformed response: "+err.Error()), u)
	}
	return p.scrub.at(p.scrub.newError(ProviderOpenAI, 0, "request failed: "+transportText(err)), u)
}
