//go:build !nobedrock

package models

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/auth/bearer"
	smithydocument "github.com/aws/smithy-go/document"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/protocol"
)

func init() {
	register(ProviderBedrock, func(ctx context.Context, c *Clients, m protocol.Model) (Provider, error) {
		role, d := c.useRoleCredentials(m)
		if d != nil {
			return nil, &Error{Provider: ProviderBedrock, Message: "model entry's " + d.Path + " " + d.Message}
		}
		cfg, err := c.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		return c.bedrock(cfg, m, role), nil
	})
}

// bedrockProvider speaks Bedrock's Converse API.
type bedrockProvider struct {
	settings
	client      *bedrockruntime.Client
	scrub       scrubber
	maxAttempts int
}

// bedrock builds the provider for m on the shared AWS configuration,
// signing with its credentials (the IAM role) only when role is set
// (useRoleCredentials decides).
func (c *Clients) bedrock(cfg aws.Config, m protocol.Model, role bool) *bedrockProvider {
	client := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		if m.Region != "" {
			o.Region = m.Region
		}
		if m.BaseURL != "" {
			o.BaseEndpoint = aws.String(m.BaseURL)
		}
		if c.HTTPClient != nil {
			o.HTTPClient = c.httpClient()
		}
		// Each call installs its own retryer; AWS_MAX_ATTEMPTS must not
		// wrap it.
		o.RetryMaxAttempts = 0
		// Credentials are the function's IAM role, or the entry's own
		// Bedrock API key. A key in AWS_BEARER_TOKEN_BEDROCK is ignored:
		// it would otherwise go to whatever baseUrl an entry names. Without
		// the role, no credentials are left for SigV4 to sign with.
		o.BearerAuthTokenProvider = nil
		o.AuthSchemePreference = nil
		if !role {
			o.Credentials = nil
		}
		if strings.TrimSpace(m.APIKey) != "" {
			o.BearerAuthTokenProvider = bearer.StaticTokenProvider{Token: bearer.Token{Value: m.APIKey}}
			o.AuthSchemePreference = []string{"httpBearerAuth"}
		}
		if len(m.Headers) > 0 {
			o.APIOptions = append(slices.Clone(o.APIOptions), addHeaders(m.Headers))
		}
	})
	return &bedrockProvider{
		settings:    settings{model: m},
		client:      client,
		scrub:       newScrubber(m),
		maxAttempts: c.retries() + 1,
	}
}

// limitedDoer bounds each reply's body by a read limit while the SDK's
// deserializer reads it.
type limitedDoer struct {
	next bedrockruntime.HTTPClient
	l    *egress.ReadLimit
}

func (d limitedDoer) Do(req *http.Request) (*http.Response, error) {
	next := d.next
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	res, err := next.Do(req)
	if res != nil {
		res.Body = d.l.Body(res.Body)
	}
	return res, err
}

// addHeaders sets the entry's extra headers on every request, in the build
// step so that SigV4 signs them.
func addHeaders(headers map[string]string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("RunnerModelHeaders",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					for k, v := range headers {
						req.Header.Set(k, v)
					}
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
}

// Complete implements Provider.
func (p *bedrockProvider) Complete(ctx context.Context, req Request) (*Response, error) {
	req.Read = req.Read.Costed(bedrockReplyCost)
	defer req.Read.Release()
	in, err := p.input(req)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	res, err := p.client.Converse(ctx, in, func(o *bedrockruntime.Options) {
		o.Retryer = newBedrockRetryer(p.maxAttempts, deadline)
		if req.Read != nil {
			o.HTTPClient = limitedDoer{o.HTTPClient, req.Read}
		}
	})
	if e := readLimitError(ProviderBedrock, req); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, p.error(ctx, err)
	}
	msg, ok := res.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		// A reply whose body the deadline or a cancellation cut off can
		// decode without an error as an empty one: the context ended it.
		if e := contextError(ctx, ProviderBedrock, nil); e != nil {
			return nil, e
		}
		return nil, p.scrub.newError(ProviderBedrock, 0, "malformed response: no message")
	}
	out := &Response{FinishReason: string(res.StopReason), Model: p.model.Model}
	if u := res.Usage; u != nil {
		out.Usage.InputTokens = int64(aws.ToInt32(u.InputTokens))
		out.Usage.OutputTokens = int64(aws.ToInt32(u.OutputTokens))
	}
	var text strings.Builder
	for _, block := range msg.Value.Content {
		switch b := block.(type) {
		case *types.ContentBlockMemberText:
			text.WriteString(b.Value)
		case *types.ContentBlockMemberToolUse:
			call := ToolCall{ID: aws.ToString(b.Value.ToolUseId), Name: aws.ToString(b.Value.Name)}
			if b.Value.Input != nil {
				raw, err := b.Value.Input.MarshalSmithyDocument()
				if err != nil {
					return nil, p.scrub.newError(ProviderBedrock, 0, "malformed response: tool input: "+err.Error())
				}
				call.Arguments = raw
			}
			call.Arguments = arguments(call.Arguments)
			out.ToolCalls = append(out.ToolCalls, call)
		}
	}
	out.Text = text.String()
	return out, nil
}

// input maps req to a Converse request.
func (p *bedrockProvider) input(req Request) (*bedrockruntime.ConverseInput, error) {
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(p.model.Model)}
	// Converse's structured output depends on the model, so the schema goes
	// in the instructions, which every model follows.
	if system := systemWithSchema(req.System, req.JSONSchema); system != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: system}}
	}
	var err error
	if in.Messages, err = bedrockMessages(req.Messages); err != nil {
		return nil, err
	}
	if in.ToolConfig, err = bedrockTools(req.Tools); err != nil {
		return nil, err
	}
	var inf types.InferenceConfiguration
	if t := p.temperature(req); t != nil {
		inf.Temperature = aws.Float32(float32(*t))
	}
	if n := p.maxTokens(req); n > 0 {
		inf.MaxTokens = aws.Int32(int32(min(n, 1<<31-1)))
	}
	if inf.Temperature != nil || inf.MaxTokens != nil {
		in.InferenceConfig = &inf
	}
	return in, nil
}

// bedrockMessages converts the conversation to Converse messages: tool
// results are user content, and consecutive messages of one side are
// merged into one turn.
func bedrockMessages(msgs []Message) ([]types.Message, error) {
	var turns []turn[types.ContentBlock]
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			if m.Content != "" {
				turns = appendTurn(turns, false, types.ContentBlock(&types.ContentBlockMemberText{Value: m.Content}))
			}
		case RoleTool:
			result := types.ToolResultBlock{
				ToolUseId: aws.String(m.ToolCallID),
				Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: m.Content}},
			}
			if m.IsError {
				result.Status = types.ToolResultStatusError
			}
			turns = appendTurn(turns, false, types.ContentBlock(&types.ContentBlockMemberToolResult{Value: result}))
		case RoleAssistant:
			blocks, err := bedrockAssistant(m)
			if err != nil {
				return nil, err
			}
			turns = appendTurn(turns, true, blocks...)
		}
	}
	var out []types.Message
	for _, t := range turns {
		role := types.ConversationRoleUser
		if t.assistant {
			role = types.ConversationRoleAssistant
		}
		out = append(out, types.Message{Role: role, Content: t.blocks})
	}
	return out, nil
}

// bedrockAssistant converts an assistant message: its text, then the tools
// it called.
func bedrockAssistant(m Message) ([]types.ContentBlock, error) {
	var blocks []types.ContentBlock
	if m.Content != "" {
		blocks = append(blocks, &types.ContentBlockMemberText{Value: m.Content})
	}
	for _, c := range m.ToolCalls {
		input, err := jsonDocument(arguments(c.Arguments))
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(c.ID),
			Name:      aws.String(c.Name),
			Input:     input,
		}})
	}
	return blocks, nil
}

// bedrockTools converts the tools offered to the model (nil for none).
func bedrockTools(tools []Tool) (*types.ToolConfiguration, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	cfg := &types.ToolConfiguration{}
	for _, t := range tools {
		schema, err := json.Marshal(toolSchema(t.InputSchema))
		if err != nil {
			return nil, err
		}
		doc, err := jsonDocument(schema)
		if err != nil {
			return nil, err
		}
		spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: doc}}
		if t.Description != "" {
			spec.Description = aws.String(t.Description)
		}
		cfg.Tools = append(cfg.Tools, &types.ToolMemberToolSpec{Value: spec})
	}
	return cfg, nil
}

// jsonDocument turns JSON into a Smithy document. Numbers become
// document.Number, not float64, so large integers in arguments survive.
func jsonDocument(raw json.RawMessage) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("models: invalid JSON for bedrock: " + err.Error())
	}
	return document.NewLazyDocument(documentValue(v)), nil
}

// documentValue replaces json.Number with the Smithy encoder's number type.
func documentValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		return smithydocument.Number(v.String())
	case map[string]any:
		for k, e := range v {
			v[k] = documentValue(e)
		}
	case []any:
		for i, e := range v {
			v[i] = documentValue(e)
		}
	}
	return v
}

// error maps an SDK failure to an *Error.
func (p *bedrockProvider) error(ctx context.Context, err error) error {
	if e := contextError(ctx, ProviderBedrock, err); e != nil {
		return e
	}
	var re *awshttp.ResponseError
	var res *http.Response
	if errors.As(err, &re) && re.Response != nil {
		res = re.Response.Response
	}
	u := requestURL(err, res)
	if re != nil && re.HTTPStatusCode() >= 400 {
		status := re.HTTPStatusCode()
		msg := ""
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			msg = apiErr.ErrorMessage()
			if code := apiErr.ErrorCode(); code != "" && msg != "" {
				msg = code + ": " + msg
			} else if msg == "" {
				msg = code
			}
		}
		return p.scrub.at(p.scrub.newError(ProviderBedrock, status, orStatusText(msg, status)), u)
	}
	// A reply that arrived but could not be read; a failed send has a
	// ResponseError too, with status 0.
	var de *smithy.DeserializationError
	if errors.As(err, &de) || (re != nil && re.Response != nil && re.HTTPStatusCode() != 0) {
		return p.scrub.at(p.scrub.newError(ProviderBedrock, 0, "malformed response: "+err.Error()), u)
	}
	return p.scrub.at(p.scrub.newError(ProviderBedrock, 0, "request failed: "+err.Error()), u)
}

// bedrockRetryer is the AWS standard retryer held to this package's policy
// for one call: retry 429 and 5xx replies (and connection failures, as the
// SDK does), honour the server's retry-after headers, and give up at once
// when the wait would end past the call's deadline.
type bedrockRetryer struct {
	*retry.Standard
	deadline time.Time // zero: none
}

// newBedrockRetryer returns the retryer for one call. Client-side retry
// quotas are off: a Lambda invocation is short, and a quota shared across
// calls would fail one execution for another's throttling.
func newBedrockRetryer(maxAttempts int, deadline time.Time) aws.RetryerV2 {
	return bedrockRetryer{
		Standard: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.RateLimiter = ratelimit.None
		}),
		deadline: deadline,
	}
}

// IsErrorRetryable retries by status where there is one, else as the SDK
// would (connection failures yes, cancellation no).
func (r bedrockRetryer) IsErrorRetryable(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.HTTPStatusCode() >= 400 {
		return retryableStatus(re.HTTPStatusCode())
	}
	return r.Standard.IsErrorRetryable(err)
}

// RetryDelay is the server's requested wait if it named one, else the SDK's
// backoff; a wait past the deadline is an error, which ends the call with
// the attempt's own error.
func (r bedrockRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	var wait time.Duration
	named := false
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		wait, named = retryAfter(re.Response.Header)
	}
	if !named {
		var derr error
		if wait, derr = r.Standard.RetryDelay(attempt, err); derr != nil {
			return 0, derr
		}
	}
	if wait > maxRetryWait || (!r.deadline.IsZero() && time.Now().Add(wait).After(r.deadline)) {
		return 0, &noRetryError{err: err}
	}
	return wait, nil
}

// noRetryError ends a call whose retry would outlive its deadline. It
// unwraps to the attempt's error, whose status and message are reported.
type noRetryError struct{ err error }

func (e *noRetryError) Error() string { return "retry would pass the deadline: " + e.err.Error() }
func (e *noRetryError) Unwrap() error { return e.err }

// awsConfig loads the AWS configuration on first use. A failure is not
// kept, so a transient one (a credentials file being written, say) does not
// disable Bedrock for the life of the process.
func (c *Clients) awsConfig(ctx context.Context) (aws.Config, error) {
	c.awsMu.Lock()
	defer c.awsMu.Unlock()
	if c.awsCfg != nil {
		return *c.awsCfg, nil
	}
	load := c.LoadAWSConfig
	if load == nil {
		load = defaultAWSConfig
	}
	cfg, err := load(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("models: loading the AWS configuration for bedrock: %w", err)
	}
	c.awsCfg = &cfg
	return cfg, nil
}
