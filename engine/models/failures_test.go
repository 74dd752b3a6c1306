//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/protocol"
)

// wire is what the failure tests need to know of a provider's protocol.
type wire struct {
	provider string
	ok       string // a successful reply
	// errorReply is the provider's error reply for status with message.
	errorReply func(status int, message string) reply
}

var wires = []wire{
	{
		provider: ProviderOpenAI,
		ok:       openAIReply,
		errorReply: func(status int, msg string) reply {
			return reply{status: status, body: fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":null}}`, msg)}
		},
	},
	{
		provider: ProviderAnthropic,
		ok:       anthropicReply,
		errorReply: func(status int, msg string) reply {
			return reply{status: status, body: fmt.Sprintf(`{"type":"error","error":{"type":"api_error","message":%q}}`, msg)}
		},
	},
	{
		provider: ProviderBedrock,
		ok:       bedrockReply,
		errorReply: func(status int, msg string) reply {
			code := map[int]string{400: "ValidationException", 401: "AccessDeniedException", 409: "ConflictException",
				429: "ThrottlingException", 500: "InternalServerException"}[status]
			return reply{status: status, header: map[string]string{"X-Amzn-ErrorType": code},
				body: fmt.Sprintf(`{"message":%q}`, msg)}
		},
	},
}

// Secrets of the failure tests' entries, which error replies echo.
const (
	testAPIKey      = "sk-secret-key-123"
	testHeaderValue = "hdr-secret-456"
)

// withHeader returns r with header k set.
func withHeader(r reply, k, v string) reply {
	h := map[string]string{k: v}
	for hk, hv := range r.header {
		h[hk] = hv
	}
	r.header = h
	return r
}

// TestFailures runs every failure scenario against every provider's real
// SDK client, pointed at a fake server speaking its wire format.
func TestFailures(t *testing.T) {
	type scenario struct {
		name       string
		replies    func(w wire) []reply
		timeout    time.Duration // 0: none
		closed     bool          // the server is gone: a transport failure
		maxRetries int
		// wantStatus 0 with wantOK false means a failure without a status.
		wantOK       bool
		wantStatus   int
		wantRequests int
		wantMessage  string // substring of Error.Message
		wantIs       error
		check        func(t *testing.T, w wire, reqs []recorded, err error, elapsed time.Duration)
	}
	scenarios := []scenario{
		{
			name: "429 then success honours retry-after",
			replies: func(w wire) []reply {
				return []reply{withHeader(w.errorReply(429, "slow down"), "Retry-After-Ms", "40"), {body: w.ok}}
			},
			maxRetries: 2, wantOK: true, wantRequests: 2,
			check: func(t *testing.T, w wire, reqs []recorded, err error, _ time.Duration) {
				if gap := reqs[1].at.Sub(reqs[0].at); gap < 40*time.Millisecond {
					t.Errorf("retry came %v after the 429, want at least the retry-after's 40ms", gap)
				}
				if w.provider != ProviderBedrock {
					if n := reqs[1].header.Get("X-Stainless-Retry-Count"); n != "1" {
						t.Errorf("X-Stainless-Retry-Count = %q, want 1", n)
					}
				}
			},
		},
		{
			name: "429 with Retry-After 0",
			replies: func(w wire) []reply {
				return []reply{withHeader(w.errorReply(429, "slow down"), "Retry-After", "0"), {body: w.ok}}
			},
			maxRetries: 1, wantOK: true, wantRequests: 2,
		},
		{
			name: "500 persistent",
			replies: func(w wire) []reply {
				return []reply{withHeader(w.errorReply(500, "upstream exploded"), "Retry-After-Ms", "1")}
			},
			maxRetries: 1, wantStatus: 500, wantRequests: 2, wantMessage: "upstream exploded",
		},
		{
			name: "500 without retries",
			replies: func(w wire) []reply {
				return []reply{w.errorReply(500, "upstream exploded")}
			},
			maxRetries: -1, wantStatus: 500, wantRequests: 1, wantMessage: "upstream exploded",
		},
		{
			name: "400 fails at once",
			replies: func(w wire) []reply {
				return []reply{w.errorReply(400, "messages: field required"), {body: w.ok}}
			},
			maxRetries: 2, wantStatus: 400, wantRequests: 1, wantMessage: "messages: field required",
		},
		{
			// The SDKs would retry a 409 themselves.
			name: "409 fails at once",
			replies: func(w wire) []reply {
				return []reply{withHeader(w.errorReply(409, "conflict"), "Retry-After-Ms", "1"), {body: w.ok}}
			},
			maxRetries: 2, wantStatus: 409, wantRequests: 1, wantMessage: "conflict",
		},
		{
			name: "retry-after past the deadline fails now",
			replies: func(w wire) []reply {
				return []reply{withHeader(w.errorReply(429, "rate limited"), "Retry-After", "30"), {body: w.ok}}
			},
			timeout: 5 * time.Second, maxRetries: 2, wantStatus: 429, wantRequests: 1, wantMessage: "rate limited",
			check: func(t *testing.T, _ wire, _ []recorded, _ error, elapsed time.Duration) {
				if elapsed > 2*time.Second {
					t.Errorf("call took %v, want it to fail at once", elapsed)
				}
			},
		},
		{
			name: "retry-after beyond the longest wait fails now",
			replies: func(w wire) []reply {
				return []reply{withHeader(w.errorReply(503, "overloaded"), "Retry-After", "3600"), {body: w.ok}}
			},
			maxRetries: 2, wantStatus: 503, wantRequests: 1, wantMessage: "overloaded",
		},
		{
			name: "malformed reply",
			replies: func(w wire) []reply {
				return []reply{{body: `{"not": "closed"`}}
			},
			maxRetries: 1, wantStatus: 0, wantRequests: 1, wantMessage: "malformed response",
		},
		{
			name: "error body echoes the secrets",
			replies: func(w wire) []reply {
				return []reply{w.errorReply(401, fmt.Sprintf("invalid key %s (header %s) sent as Bearer %s",
					testAPIKey, testHeaderValue, testAPIKey))}
			},
			maxRetries: 1, wantStatus: 401, wantRequests: 1, wantMessage: "invalid key [REDACTED] (header [REDACTED])",
			check: func(t *testing.T, _ wire, _ []recorded, err error, _ time.Duration) {
				for _, secret := range []string{testAPIKey, testHeaderValue} {
					if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), secret) {
						t.Errorf("error %q reveals %q", err, secret)
					}
				}
			},
		},
		{
			name: "deadline while waiting",
			replies: func(w wire) []reply {
				return []reply{{body: w.ok, wait: 10 * time.Second}}
			},
			timeout: 150 * time.Millisecond, maxRetries: 2, wantStatus: 0, wantRequests: 1,
			wantMessage: "deadline exceeded", wantIs: context.DeadlineExceeded,
		},
		{
			name:    "transport failure",
			replies: func(w wire) []reply { return []reply{{body: w.ok}} },
			closed:  true, maxRetries: -1, wantStatus: 0, wantRequests: 0, wantMessage: "request failed",
		},
	}
	for _, w := range wires {
		for _, sc := range scenarios {
			t.Run(w.provider+"/"+sc.name, func(t *testing.T) {
				awsTestEnv(t)
				srv := newFakeServer(t, w.provider == ProviderBedrock, sc.replies(w)...)
				clients := &Clients{HTTPClient: srv.client(t), TrustedEndpoints: []string{srv.URL}, MaxRetries: sc.maxRetries}
				m := protocol.Model{Provider: w.provider, Model: "test-model", BaseURL: srv.URL,
					APIKey: testAPIKey, Headers: map[string]string{"X-Secret": testHeaderValue}}
				p, err := clients.Provider(context.Background(), m)
				if err != nil {
					t.Fatal(err)
				}
				if sc.closed {
					srv.Close()
				}
				ctx := context.Background()
				if sc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, sc.timeout)
					defer cancel()
				}
				start := time.Now()
				res, err := p.Complete(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
				elapsed := time.Since(start)
				reqs := srv.received()
				if len(reqs) != sc.wantRequests {
					t.Errorf("server received %d requests, want %d", len(reqs), sc.wantRequests)
				}
				if sc.wantOK {
					if err != nil {
						t.Fatalf("Complete: %v", err)
					}
					if res.Text != "Let me check." {
						t.Errorf("Text = %q", res.Text)
					}
				} else {
					var e *Error
					if !errors.As(err, &e) {
						t.Fatalf("Complete error = %v (%T), want *Error", err, err)
					}
					if e.Provider != w.provider || e.Status != sc.wantStatus {
						t.Errorf("Error = %+v, want provider %s status %d", e, w.provider, sc.wantStatus)
					}
					if !strings.Contains(e.Message, sc.wantMessage) {
						t.Errorf("Message = %q, want it to contain %q", e.Message, sc.wantMessage)
					}
					if sc.wantIs != nil && !errors.Is(err, sc.wantIs) {
						t.Errorf("errors.Is(%v, %v) = false", err, sc.wantIs)
					}
					if sc.wantIs == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
						t.Errorf("error %v claims to be a context error", err)
					}
				}
				if sc.check != nil && len(reqs) == sc.wantRequests {
					sc.check(t, w, reqs, err, elapsed)
				}
			})
		}
	}
}

// TestInvalidRequest checks that a request no provider could take fails
// before anything is sent.
func TestInvalidRequest(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"unknown role", Request{Messages: []Message{{Role: "system", Content: "x"}}}, `unknown role "system"`},
		{"tool without id", Request{Messages: []Message{{Role: RoleTool, Content: "x"}}}, "toolCallId"},
		{"call without name", Request{Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1"}}}}}, "id and name"},
		{"bad arguments", Request{Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: []byte("{")}}}}}, "not valid JSON"},
		{"bad tool schema", Request{Tools: []Tool{{Name: "f", InputSchema: []byte(`[1]`)}}}, "must be a JSON object"},
		{"tool without name", Request{Tools: []Tool{{}}}, "name is required"},
		{"bad json schema", Request{JSONSchema: []byte(`"x"`)}, "json schema"},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(w.provider+"/"+tt.name, func(t *testing.T) {
				awsTestEnv(t)
				srv := newFakeServer(t, w.provider == ProviderBedrock, reply{body: w.ok})
				p, err := (&Clients{HTTPClient: srv.client(t), TrustedEndpoints: []string{srv.URL}}).Provider(context.Background(),
					protocol.Model{Provider: w.provider, Model: "m", BaseURL: srv.URL})
				if err != nil {
					t.Fatal(err)
				}
				_, err = p.Complete(context.Background(), tt.req)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Complete error = %v, want one containing %q", err, tt.want)
				}
				if n := len(srv.received()); n != 0 {
					t.Errorf("server received %d requests, want none", n)
				}
			})
		}
	}
}

func TestProviderUnknown(t *testing.T) {
	_, err := (&Clients{}).Provider(context.Background(), protocol.Model{Provider: "cohere", Model: "m"})
	if err == nil || !strings.Contains(err.Error(), `unknown provider "cohere"`) {
		t.Errorf("Provider error = %v, want unknown provider", err)
	}
}

// TestReplyLimit: a reply larger than Request.Read fails while the SDK
// reads it, with every provider, as an *Error unwrapping the limit's error.
// A reply is counted as what it decodes to (jsonweight), or its bytes
// when they are more.
func TestReplyLimit(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			awsTestEnv(t)
			srv := newFakeServer(t, w.provider == ProviderBedrock, reply{body: w.ok})
			p, err := (&Clients{HTTPClient: srv.client(t), TrustedEndpoints: []string{srv.URL}, MaxRetries: -1}).Provider(context.Background(),
				protocol.Model{Provider: w.provider, Model: "m", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			req := Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}
			req.Read = egress.NewReadLimit(int64(len(w.ok)/2), "model reply", nil)
			_, err = p.Complete(context.Background(), req)
			var e *Error
			var rl *egress.ReadLimitError
			if !errors.As(err, &e) || !errors.As(err, &rl) || !strings.Contains(e.Message, "model reply exceeds") {
				t.Errorf("Complete error = %v, want the reply limit's", err)
			}
			req.Read = egress.NewReadLimit(max(jsonweight.Of([]byte(w.ok)), int64(len(w.ok))), "model reply", nil)
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Errorf("a reply at the limit failed: %v", err)
			}
		})
	}
}
