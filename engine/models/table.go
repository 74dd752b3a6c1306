package models

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/runnerd/lambda-runner/internal/httpfield"
	"github.com/runnerd/lambda-runner/protocol"
)

// GeneralRole is the role a lookup falls back to.
const GeneralRole = "general"

// Table maps workflow roles to model entries. It is immutable and safe for
// concurrent use.
type Table struct {
	byRole map[string]protocol.Model
}

// NewTable validates models and indexes them by role. path prefixes the
// paths of the problems found ("runtime.models" or "RUNNER_MODELS"). On
// failure it returns every problem, joined with [errors.Join]; list them
// with errors.As or by walking the join. Messages never quote an API key, header value or URL.
func NewTable(path string, models []protocol.Model) (*Table, error) {
	t := &Table{byRole: make(map[string]protocol.Model, len(models))}
	var errs []error
	fail := func(p, format string, args ...any) {
		errs = append(errs, &protocol.Detail{Path: p, Message: fmt.Sprintf(format, args...)})
	}
	firstAt := map[string]int{}
	for i, m := range models {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case strings.TrimSpace(m.Role) == "":
			fail(at+".role", "is required")
		default:
			if j, dup := firstAt[m.Role]; dup {
				fail(at+".role", "duplicate role %q (also %s[%d])", m.Role, path, j)
			} else {
				firstAt[m.Role] = i
			}
		}
		if msg := checkProvider(m.Provider); msg != "" {
			fail(at+".provider", "%s", msg)
		}
		if strings.TrimSpace(m.Model) == "" {
			fail(at+".model", "is required")
		}
		if m.BaseURL != "" {
			if msg := checkBaseURL(m.BaseURL); msg != "" {
				fail(at+".baseUrl", "%s", msg)
			}
		}
		if m.Region != "" && !isRegion(m.Region) {
			// The region names the host of AWS's endpoint, which receives
			// the IAM role's credentials (credentials.go).
			fail(at+".region", "must be an AWS region such as us-east-1")
		}
		if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
			fail(at+".temperature", "must be between 0 and 2")
		}
		if m.MaxTokens != nil && *m.MaxTokens <= 0 {
			fail(at+".maxTokens", "must be positive")
		}
		names := make([]string, 0, len(m.Headers))
		for name := range m.Headers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !httpfield.ValidName(name) {
				fail(fmt.Sprintf("%s.headers[%q]", at, name), "is not a valid header name")
			} else if strings.ContainsAny(m.Headers[name], "\r\n\x00") {
				fail(fmt.Sprintf("%s.headers[%q]", at, name), "value must not contain CR, LF or NUL")
			}
		}
		if _, dup := t.byRole[m.Role]; !dup {
			t.byRole[m.Role] = m
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// checkBaseURL returns why raw is not a usable base URL, or "".
func checkBaseURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// The parse error quotes the URL, which may hold credentials.
		return "is not a valid URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.Host == "":
		return "must name a host"
	case u.RawQuery != "" || u.Fragment != "":
		return "must not have a query or fragment"
	}
	return ""
}

// isRegion reports whether s has the form of an AWS region: lower-case
// words joined by '-', the last one a number ("us-east-1",
// "us-gov-west-1"). Nothing else may become part of an endpoint's host.
func isRegion(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 || len(parts[0]) < 2 {
		return false
	}
	for i, p := range parts {
		if p == "" {
			return false
		}
		for _, c := range []byte(p) {
			if i < len(parts)-1 && (c < 'a' || c > 'z') || i == len(parts)-1 && (c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}

// Lookup returns the entry for role: the exact role, else the "general"
// role, else false.
func (t *Table) Lookup(role string) (protocol.Model, bool) {
	if t == nil {
		return protocol.Model{}, false
	}
	if m, ok := t.byRole[role]; ok {
		return m, true
	}
	m, ok := t.byRole[GeneralRole]
	return m, ok
}

// FallsBack reports whether [Table.Lookup] of role answers with the
// "general" entry in its stead: the table has general but not role.
func (t *Table) FallsBack(role string) bool {
	if t == nil || role == GeneralRole {
		return false
	}
	_, exact := t.byRole[role]
	_, general := t.byRole[GeneralRole]
	return !exact && general
}

// Roles returns the table's roles, sorted.
func (t *Table) Roles() []string {
	if t == nil {
		return nil
	}
	roles := make([]string, 0, len(t.byRole))
	for r := range t.byRole {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}

// Secrets returns the table's secret values — API keys and header values —
// for the engine to redact from events, errors and logs.
func (t *Table) Secrets() []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, role := range t.Roles() {
		m := t.byRole[role]
		if m.APIKey != "" {
			out = append(out, m.APIKey)
		}
		for _, v := range m.Headers {
			if v != "" {
				out = append(out, v)
			}
		}
		if u, err := url.Parse(m.BaseURL); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
