package toolsets

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestScrub(t *testing.T) {
	s := newScrubber(map[string]string{
		"Authorization": "Bearer tok/en+1",
		"X-Flag":        "",
	}, "https://mcp.example.com/mcp?key=qv%2F9-long&x=1")
	tests := []struct {
		in, want string
	}{
		{"got Bearer tok/en+1", "got [REDACTED]"},
		{"token tok/en+1 alone", "token [REDACTED] alone"},
		{"escaped tok%2Fen%2B1 and tok%2Fen+1", "escaped [REDACTED] and [REDACTED]"},
		{`json "Bearer tok\/en+1"`, `json "[REDACTED]"`},
		{`Post "https://mcp.example.com/mcp?key=qv%2F9-long&x=1": refused`, `Post "https://mcp.example.com/mcp?[REDACTED]": refused`},
		{"the key qv/9-long itself, x=1", "the key [REDACTED] itself, x=1"},
		{"  nothing secret  ", "nothing secret"},
		{strings.Repeat("é", 600), strings.Repeat("é", 500) + "…"},
	}
	for _, tt := range tests {
		if got := s.scrub(tt.in); got != tt.want {
			t.Errorf("scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (scrubber{}).scrub("plain"); got != "plain" {
		t.Errorf("empty scrubber: %q", got)
	}
}

func TestErrorUnwrap(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Toolset: "gh", Message: "m", cause: ErrClosed}, `toolset "gh": m`},
		{&Error{Toolset: "gh", Tool: "t", Message: "m", cause: ErrTimeout}, `toolset "gh": tool "t": m`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, tt.err.cause) {
			t.Errorf("%v does not unwrap to %v", tt.err, tt.err.cause)
		}
	}
	var je *jsonrpc.Error
	if errors.As(&Error{Message: "m"}, &je) {
		t.Error("an Error without cause unwraps to something")
	}
}

type recordingTransport struct{ got *http.Request }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = req
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: req}, nil
}

func TestHeaderTransport(t *testing.T) {
	tests := []struct {
		url      string
		wantAuth string
	}{
		{"https://mcp.example.com/mcp", "Bearer t"},
		{"https://mcp.example.com/other?x=1", "Bearer t"}, // same origin, other path
		{"https://evil.example.com/mcp", ""},              // a redirect off-site
		{"http://mcp.example.com/mcp", ""},                // a downgrade
		{"https://mcp.example.com:8443/mcp", ""},          // another port
	}
	for _, tt := range tests {
		base := &recordingTransport{}
		rt := newHeaderTransport(base, "https://mcp.example.com/mcp", map[string]string{"authorization": "Bearer t"}, reads{})
		req, _ := http.NewRequest(http.MethodPost, tt.url, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if got := base.got.Header.Get("Authorization"); got != tt.wantAuth {
			t.Errorf("%s: Authorization = %q, want %q", tt.url, got, tt.wantAuth)
		}
		if req.Header.Get("Authorization") != "" {
			t.Errorf("%s: the caller's request was modified", tt.url)
		}
	}
}
