package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/tokens"
)

// wireConfig loads a configuration from env, as main does.
func wireConfig(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The capabilities advertise what the engine really has: every registered
// node type, the providers the models package speaks, the roles of the
// deployment's table, the toolset transport.
func TestCapabilitiesFromServices(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		roles []string
	}{
		{"no model table", map[string]string{}, []string{}},
		{"deployment table", map[string]string{"RUNNER_MODELS": `[
			{"role":"general","provider":"openai","model":"gpt-4o-mini","apiKey":"sk-x"},
			{"role":"classifier","provider":"bedrock","model":"anthropic.claude","region":"us-east-1"}]`},
			[]string{"classifier", "general"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := wireConfig(t, tt.env)
			h, err := newHandler(context.Background(), cfg, tokens.Static{Set: tokens.NewSet("t")}, slog.New(slog.DiscardHandler), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c := h.Capabilities
			if want := []string{"agent", "fail", "http", "map", "model", "set", "tool", "workflow"}; !slices.Equal(c.NodeTypes, want) {
				t.Errorf("nodeTypes = %q, want %q", c.NodeTypes, want)
			}
			rt := c.Runtime
			if want := []string{"anthropic", "bedrock", "openai"}; !slices.Equal(rt.Models.Providers, want) {
				t.Errorf("providers = %q, want %q", rt.Models.Providers, want)
			}
			if !slices.Equal(rt.Models.Roles, tt.roles) || rt.Models.Roles == nil {
				t.Errorf("roles = %#v, want %q", rt.Models.Roles, tt.roles)
			}
			if want := []string{"streamable-http"}; !slices.Equal(rt.Toolsets.Transports, want) {
				t.Errorf("transports = %q, want %q", rt.Toolsets.Transports, want)
			}
			if !rt.HTTP || !rt.Workflows || rt.Checkpoints || rt.PersistentValues {
				t.Errorf("runtime = %+v", rt)
			}
		})
	}
}

// A bad deployment model table stops the runner at startup, naming the
// variable and every problem, never a key.
func TestBadModelTableStopsStartup(t *testing.T) {
	env := map[string]string{
		"RUNNER_TOKENS": "t",
		"RUNNER_ADDR":   "127.0.0.1:0",
		"RUNNER_MODELS": `[{"role":"general","provider":"watson","model":"m","apiKey":"sk-n0t-to-be-sh0wn"},{"role":"general","provider":"openai"}]`,
	}
	// Cancelled: were the table accepted, the local server would stop at
	// once instead of serving for ever.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("run started with a bad RUNNER_MODELS")
	}
	msg := err.Error()
	for _, want := range []string{"RUNNER_MODELS[0].provider", `unknown provider "watson"`, "RUNNER_MODELS[1].role", "RUNNER_MODELS[1].model"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "sk-n0t-to-be-sh0wn") {
		t.Errorf("error %q shows the key", msg)
	}
}
