package nodes

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExposedName(t *testing.T) {
	long := strings.Repeat("t", 80)
	tests := []struct {
		ts, tool string
		taken    []string
		want     string
	}{
		{"math", "add", nil, "math__add"},
		{"git.hub", "create issue/now", nil, "git_hub__create_issue_now"},
		{"math", "añadir", nil, "math__a_adir"},
		{"math", "add", []string{"math__add"}, "math__add_2"},
		{"math", "add", []string{"math__add", "math__add_2"}, "math__add_3"},
		{"ts", long, nil, ("ts__" + long)[:64]},
		{"ts", long, []string{("ts__" + long)[:64]}, ("ts__" + long)[:62] + "_2"},
	}
	for _, tt := range tests {
		taken := map[string]agentTool{}
		for _, n := range tt.taken {
			taken[n] = agentTool{}
		}
		got := exposedName(tt.ts, tt.tool, taken)
		if got != tt.want {
			t.Errorf("exposedName(%q, %q) = %q, want %q", tt.ts, tt.tool, got, tt.want)
		}
		if len(got) > 64 {
			t.Errorf("exposedName(%q, %q) is %d bytes", tt.ts, tt.tool, len(got))
		}
	}
}

func TestTemplatedHost(t *testing.T) {
	tests := []struct {
		url  any
		host string // "" when the host is not static
	}{
		{"https://api.example.com/issues/${{ input.issue }}", "api.example.com"},
		{"http://API.Example.com:8080/${{ input.p }}", "api.example.com"},
		{"https://api.example.com?q=${{ input.q }}", "api.example.com"},
		{"https://[::1]:443/${{ input.p }}", "::1"},
		{"https://${{ input.host }}/x", ""},
		{"https://api.${{ input.domain }}/x", ""},
		{"https://api.example.com${{ input.path }}", ""}, // could be ".evil.com"
		{"https://user@api.example.com/${{ input.p }}", ""},
		{"${{ input.url }}", ""},
		{"ftp://files.example.com/${{ input.p }}", ""},
		{"https://api.example.com/plain", ""}, // literal: prepareLiteralURL's
		{42.0, ""},
	}
	for _, tt := range tests {
		host, ok := templatedHost(tt.url)
		if host != tt.host || ok != (tt.host != "") {
			t.Errorf("templatedHost(%v) = %q, %v; want %q", tt.url, host, ok, tt.host)
		}
	}
}

func TestUnfence(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"  {\"a\":1}\n", `{"a":1}`},
		{"```json\n{\"a\":1}\n```", `{"a":1}`},
		{"```\n[1,2]\n```", `[1,2]`},
		{"```{\"a\":1}```", `{"a":1}`},
		{"``` ", "```"},
	}
	for _, tt := range tests {
		if got := unfence(tt.in); got != tt.want {
			t.Errorf("unfence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClipMessage(t *testing.T) {
	long := strings.Repeat("é", maxMessage) // two bytes each
	tests := []struct {
		in      string
		wantLen int
	}{
		{"short", 5},
		{strings.Repeat("a", maxMessage), maxMessage},
		{strings.Repeat("a", maxMessage+1), maxMessage + len("…")},
		{long, maxMessage + len("…")},
	}
	for _, tt := range tests {
		got := clipMessage(tt.in)
		if len(got) != tt.wantLen || !utf8.ValidString(got) {
			t.Errorf("clipMessage(%d bytes) = %d bytes (valid UTF-8: %v), want %d", len(tt.in), len(got), utf8.ValidString(got), tt.wantLen)
		}
	}
}
