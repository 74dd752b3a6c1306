package main

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

// wireConfig loads a configuration from env, as main does.
func wireConfig(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CodeWorker == "" {
		cfg.CodeWorker = inProcessWorker()
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
			h, err := newHandler(context.Background(), cfg, tokens.Static{Set: tokens.NewSet("t")}, slog.New(slog.DiscardHandler), io.Discard, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := h.Capabilities
			want := []string{"agent", "code", "fail", "http", "map", "model", "set", "tool", "workflow"}
			if code, _ := codePool(cfg, engine.DefaultLimits()); code == nil { // a nocode build
				want = slices.DeleteFunc(want, func(s string) bool { return s == "code" })
			}
			if !slices.Equal(c.NodeTypes, want) {
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

// A bare deployment advertises each package's own defaults, and settings
// that size others (memory, budget) move them as documented.
func TestBareDeployment(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want protocol.Constraints
	}{
		{"nothing set", map[string]string{}, protocol.Constraints{
			MaxDurationMs: 899_500, MemoryMb: 512, MaxRequestBytes: 6 << 20,
			MaxNodes: 10_000, MaxConcurrency: 16, MaxMapItems: 10_000, MaxChildDepth: 8,
			MaxEventBytes: 64 << 10, MaxOutputBytes: 4 << 20, MemoryBudget: 128 << 20, // a quarter of 512 MB
			MaxStreamBytes: 20 << 20, MaxBufferedStreamBytes: 6<<20 - 64<<10,
		}},
		{"memory and timeout", map[string]string{"RUNNER_MEMORY_MB": "1024", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048",
			"RUNNER_TIMEOUT_SECONDS": "60", "RUNNER_RESERVE_MS": "1500", "RUNNER_MAX_REQUEST_BYTES": "2048"}, protocol.Constraints{
			MaxDurationMs: 58_500, MemoryMb: 2048, MaxRequestBytes: 2048,
			MaxNodes: 10_000, MaxConcurrency: 16, MaxMapItems: 10_000, MaxChildDepth: 8,
			MaxEventBytes: 64 << 10, MaxOutputBytes: 4 << 20, MemoryBudget: 512 << 20,
		}},
		// A small budget caps the per-node output by default.
		{"small budget", map[string]string{"RUNNER_MEMORY_BUDGET_BYTES": "65536"}, protocol.Constraints{
			MaxDurationMs: 899_500, MemoryMb: 512, MaxRequestBytes: 6 << 20,
			MaxNodes: 10_000, MaxConcurrency: 16, MaxMapItems: 10_000, MaxChildDepth: 8,
			MaxEventBytes: 64 << 10, MaxOutputBytes: 65536, MemoryBudget: 65536,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := newHandler(context.Background(), wireConfig(t, tt.env), tokens.Static{Set: tokens.NewSet("t")}, slog.New(slog.DiscardHandler), io.Discard, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Fields the table leaves zero (limits added later) are not
			// compared.
			got, want := reflect.ValueOf(h.Capabilities.Constraints), reflect.ValueOf(tt.want)
			for i := range want.NumField() {
				if !want.Field(i).IsZero() && !got.Field(i).Equal(want.Field(i)) {
					t.Errorf("%s = %v, want %v", want.Type().Field(i).Name, got.Field(i), want.Field(i))
				}
			}
			if got := h.RequestLimit(); got != tt.want.MaxRequestBytes {
				t.Errorf("handler request limit %d, advertised %d", got, tt.want.MaxRequestBytes)
			}
		})
	}
}
