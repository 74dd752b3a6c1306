package glob

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, resource string
		want              bool
	}{
		{"*", "github/create_issue", true},
		{"*", "general", true},
		{"github/*", "github/create_issue", true},
		{"github/*", "github/a/b", false},
		{"github/*", "gitlab/create_issue", false},
		{"github/create_*", "github/create_issue", true},
		{"github/create_*", "github/delete_issue", false},
		{"*/search", "web/search", true},
		{"*/search", "web/searches", false},
		{"github/*_issue", "github/create_issue", true},
		{"GitHub/*", "github/create_issue", false},
		{"general", "general", true},
		{"general", "general2", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.resource); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.resource, got, tt.want)
		}
	}
}

func TestMatchHost(t *testing.T) {
	tests := []struct {
		pattern, host string
		want          bool
	}{
		{"*", "api.example.com", true},
		{"api.example.com", "api.example.com", true},
		{"api.example.com", "API.Example.COM", true},
		{"API.example.com", "api.example.com.", true},
		{"api.example.com", "example.com", false},
		{"*.example.com", "api.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "evilexample.com", false},
		{"*.example.com", "example.com.evil.org", false},
		{"api-*.example.com", "api-eu.example.com", true},
		{"api-*.example.com", "api-eu.x.example.com", false},
		{"example.*", "example.org", true},
		{"example.*", "example.co.uk", false},
	}
	for _, tt := range tests {
		if got := MatchHost(tt.pattern, tt.host); got != tt.want {
			t.Errorf("MatchHost(%q, %q) = %v, want %v", tt.pattern, tt.host, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []string{"", "a b", "github/**"} {
		if Validate(p) == nil {
			t.Errorf("Validate(%q) = nil, want an error", p)
		}
	}
	for _, p := range []string{"*", "github/*", "*.example.com"} {
		if err := Validate(p); err != nil {
			t.Errorf("Validate(%q) = %v", p, err)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("github/*", "github/x")
	f.Add("*.a.b", "c.a.b")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		// Neither may panic, and "*" matches everything.
		if !Match("*", s) || !MatchHost("*", s) {
			t.Fatalf("\"*\" must match %q", s)
		}
		_ = Match(pattern, s) || MatchHost(pattern, s)
		if !Match(s, s) && s != "" && !containsStar(s) {
			t.Fatalf("a literal pattern must match itself: %q", s)
		}
	})
}

func containsStar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' {
			return true
		}
	}
	return false
}
