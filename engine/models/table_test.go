package models

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

func ptr[T any](v T) *T { return &v }

func TestNewTableValidation(t *testing.T) {
	ok := protocol.Model{Role: "general", Provider: "openai", Model: "gpt-5"}
	tests := []struct {
		name   string
		path   string
		models []protocol.Model
		want   []protocol.Detail // nil: valid
	}{
		{name: "empty", path: "runtime.models"},
		{name: "valid", path: "runtime.models", models: []protocol.Model{
			ok,
			{Role: "coder", Provider: "anthropic", Model: "claude-sonnet-5-5", BaseURL: "https://proxy.example.com/anthropic",
				Headers: map[string]string{"X-Team": "a"}, Temperature: ptr(0.2), MaxTokens: ptr(100)},
			{Role: "cheap", Provider: "bedrock", Model: "amazon.nova-lite-v1:0", Region: "eu-west-1"},
		}},
		{name: "unknown provider", path: "runtime.models", models: []protocol.Model{
			ok, {Role: "x", Provider: "x", Model: "m"},
		}, want: []protocol.Detail{{Path: "runtime.models[1].provider", Message: `unknown provider "x" (want openai, anthropic or bedrock)`}}},
		{name: "missing fields", path: "RUNNER_MODELS", models: []protocol.Model{{}},
			want: []protocol.Detail{
				{Path: "RUNNER_MODELS[0].role", Message: "is required"},
				{Path: "RUNNER_MODELS[0].provider", Message: "is required (openai, anthropic or bedrock)"},
				{Path: "RUNNER_MODELS[0].model", Message: "is required"},
			}},
		{name: "duplicate role", path: "runtime.models", models: []protocol.Model{ok, ok},
			want: []protocol.Detail{{Path: "runtime.models[1].role", Message: `duplicate role "general" (also runtime.models[0])`}}},
		{name: "base url scheme", path: "runtime.models", models: []protocol.Model{
			{Role: "a", Provider: "openai", Model: "m", BaseURL: "ftp://example.com"},
		}, want: []protocol.Detail{{Path: "runtime.models[0].baseUrl", Message: "must be an http or https URL"}}},
		{name: "base url relative", path: "runtime.models", models: []protocol.Model{
			{Role: "a", Provider: "openai", Model: "m", BaseURL: "/v1"},
		}, want: []protocol.Detail{{Path: "runtime.models[0].baseUrl", Message: "must be an http or https URL"}}},
		{name: "base url no host", path: "runtime.models", models: []protocol.Model{
			{Role: "a", Provider: "openai", Model: "m", BaseURL: "https://"},
		}, want: []protocol.Detail{{Path: "runtime.models[0].baseUrl", Message: "must name a host"}}},
		{name: "base url unparsable", path: "runtime.models", models: []protocol.Model{
			{Role: "a", Provider: "openai", Model: "m", BaseURL: "http://user:s3cr%zz@host"},
		}, want: []protocol.Detail{{Path: "runtime.models[0].baseUrl", Message: "is not a valid URL"}}},
		{name: "ranges", path: "runtime.models", models: []protocol.Model{
			{Role: "a", Provider: "openai", Model: "m", Temperature: ptr(2.5), MaxTokens: ptr(0)},
		}, want: []protocol.Detail{
			{Path: "runtime.models[0].temperature", Message: "must be between 0 and 2"},
			{Path: "runtime.models[0].maxTokens", Message: "must be positive"},
		}},
		{name: "headers", path: "runtime.models", models: []protocol.Model{
			{Role: "a", Provider: "openai", Model: "m", Headers: map[string]string{"Bad Name": "v", "X-Ok": "line\nbreak"}},
		}, want: []protocol.Detail{
			{Path: `runtime.models[0].headers["Bad Name"]`, Message: "is not a valid header name"},
			{Path: `runtime.models[0].headers["X-Ok"]`, Message: "value must not contain CR, LF or NUL"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := NewTable(tt.path, tt.models)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("NewTable: %v", err)
				}
				if got := len(table.Roles()); got != len(tt.models) {
					t.Fatalf("Roles() has %d roles, want %d", got, len(tt.models))
				}
				return
			}
			if err == nil {
				t.Fatal("NewTable succeeded, want an error")
			}
			if table != nil {
				t.Error("NewTable returned a table with its error")
			}
			var got []protocol.Detail
			for _, fe := range fieldErrors(err) {
				got = append(got, *fe)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FieldErrors =\n%q\nwant\n%q", got, tt.want)
			}
			var fe *protocol.Detail
			if !errors.As(err, &fe) {
				t.Error("errors.As(*protocol.Detail) failed")
			}
			if !strings.Contains(err.Error(), tt.want[0].Path+": "+tt.want[0].Message) {
				t.Errorf("Error() = %q, want it to contain the first problem", err)
			}
		})
	}
}

func TestNewTableNeverQuotesSecrets(t *testing.T) {
	_, err := NewTable("runtime.models", []protocol.Model{
		{Role: "a", Provider: "nope", Model: "m", APIKey: "sk-secret-key",
			BaseURL: "gopher://user:hunter2@host", Headers: map[string]string{"Bad Name": "hdr-secret"}},
	})
	if err == nil {
		t.Fatal("NewTable succeeded")
	}
	for _, secret := range []string{"sk-secret-key", "hunter2", "hdr-secret"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q contains %q", err, secret)
		}
	}
}

func TestLookup(t *testing.T) {
	general := protocol.Model{Role: "general", Provider: "openai", Model: "gpt-5"}
	coder := protocol.Model{Role: "coder", Provider: "anthropic", Model: "claude"}
	withGeneral, err := NewTable("runtime.models", []protocol.Model{coder, general})
	if err != nil {
		t.Fatal(err)
	}
	withoutGeneral, err := NewTable("runtime.models", []protocol.Model{coder})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		table  *Table
		role   string
		want   protocol.Model
		wantOK bool
	}{
		{"exact", withGeneral, "coder", coder, true},
		{"exact general", withGeneral, "general", general, true},
		{"fallback to general", withGeneral, "classifier", general, true},
		{"missing", withoutGeneral, "classifier", protocol.Model{}, false},
		{"exact without general", withoutGeneral, "coder", coder, true},
		{"case sensitive", withoutGeneral, "Coder", protocol.Model{}, false},
		{"nil table", nil, "coder", protocol.Model{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.table.Lookup(tt.role)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.role, got, ok, tt.want, tt.wantOK)
			}
		})
	}
	if got, want := withGeneral.Roles(), []string{"coder", "general"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Roles() = %q, want %q", got, want)
	}
}

func TestTableSecrets(t *testing.T) {
	table, err := NewTable("RUNNER_MODELS", []protocol.Model{
		{Role: "a", Provider: "openai", Model: "m", APIKey: "key-a", Headers: map[string]string{"X-Org": "org-secret"}},
		{Role: "b", Provider: "openai", Model: "m", BaseURL: "https://u:pw-secret@example.com/v1"},
		{Role: "c", Provider: "bedrock", Model: "m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := table.Secrets()
	want := []string{"key-a", "org-secret", "pw-secret"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Secrets() = %q, want %q", got, want)
	}
}
