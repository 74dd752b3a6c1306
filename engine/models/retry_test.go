package models

import (
	"net/http"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(time.RFC1123)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		slack  time.Duration
		wantOK bool
	}{
		{name: "none"},
		{name: "ms", header: map[string]string{"Retry-After-Ms": "250"}, want: 250 * time.Millisecond, wantOK: true},
		{name: "ms wins over seconds", header: map[string]string{"Retry-After-Ms": "5", "Retry-After": "9"}, want: 5 * time.Millisecond, wantOK: true},
		{name: "amz", header: map[string]string{"X-Amz-Retry-After": "1500"}, want: 1500 * time.Millisecond, wantOK: true},
		{name: "seconds", header: map[string]string{"Retry-After": "2"}, want: 2 * time.Second, wantOK: true},
		{name: "fractional seconds", header: map[string]string{"Retry-After": "0.5"}, want: 500 * time.Millisecond, wantOK: true},
		{name: "zero", header: map[string]string{"Retry-After": "0"}, want: 0, wantOK: true},
		{name: "date", header: map[string]string{"Retry-After": future}, want: 90 * time.Second, slack: 2 * time.Second, wantOK: true},
		{name: "huge saturates", header: map[string]string{"Retry-After": "1e300"}, want: 1<<63 - 1, wantOK: true},
		{name: "negative ignored", header: map[string]string{"Retry-After": "-1"}},
		{name: "garbage ignored", header: map[string]string{"Retry-After": "soon"}},
		{name: "bad ms falls back", header: map[string]string{"Retry-After-Ms": "x", "Retry-After": "1"}, want: time.Second, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := retryAfter(h)
			if ok != tt.wantOK || got < tt.want-tt.slack || got > tt.want {
				t.Errorf("retryAfter(%v) = %v, %v; want %v (-%v), %v", tt.header, got, ok, tt.want, tt.slack, tt.wantOK)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	s := newScrubber(protocolModelWithSecrets())
	tests := []struct{ in, want string }{
		{"key sk-a/b+c here", "key [REDACTED] here"},
		{`json "sk-a/b+c"`, `json "[REDACTED]"`},
		{"query key=sk-a%2Fb%2Bc", "query key=[REDACTED]"},
		{"header tok\"q", "header [REDACTED]"},
		{`escaped tok\"q`, "escaped [REDACTED]"},
		{"url https://bob:pw-1@host", "url https://[REDACTED]@host"},
		{"nothing secret", "nothing secret"},
	}
	for _, tt := range tests {
		if got := s.scrub(tt.in); got != tt.want {
			t.Errorf("scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	long := s.scrub(string(make([]byte, 5000)))
	if len(long) > maxMessageLen+len("…") {
		t.Errorf("scrub kept %d bytes, want at most %d", len(long), maxMessageLen)
	}
}

func protocolModelWithSecrets() protocol.Model {
	return protocol.Model{APIKey: "sk-a/b+c", BaseURL: "https://bob:pw-1@host", Headers: map[string]string{"X": `tok"q`}}
}
