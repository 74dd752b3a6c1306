package config

import (
	"errors"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// env is a fake environment for Load.
type env map[string]string

func (e env) get(name string) string { return e[name] }

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env{}.get)
	if err != nil {
		t.Fatalf("Load of an empty environment: %v", err)
	}
	// Everything else is zero: the package that owns a setting applies its
	// own default (see TestBareDeployment in functions/runner).
	want := Config{
		LambdaMode: LambdaModeAuto,
		Addr:       "127.0.0.1:8080",
		LogLevel:   slog.LevelInfo,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

func TestLoadValues(t *testing.T) {
	tests := []struct {
		name  string
		env   env
		check func(c Config) bool
	}{
		{"lambda", env{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, func(c Config) bool { return c.Lambda && c.RuntimeAPI == "127.0.0.1:9001" }},
		{"not lambda", env{}, func(c Config) bool { return !c.Lambda }},
		{"address", env{"RUNNER_ADDR": " :9090 "}, func(c Config) bool { return c.Addr == ":9090" }},
		{"tokens", env{"RUNNER_TOKENS": " a ,, b,c "}, func(c Config) bool { return reflect.DeepEqual(c.Tokens, []string{"a", "b", "c"}) }},
		{"blank tokens", env{"RUNNER_TOKENS": " , "}, func(c Config) bool { return len(c.Tokens) == 0 }},
		{"token secret", env{"RUNNER_TOKEN_SECRET_ID": " arn:aws:secretsmanager:x "}, func(c Config) bool { return c.TokenSecretID == "arn:aws:secretsmanager:x" }},
		{"token cache", env{"RUNNER_TOKEN_CACHE_TTL": "90s", "RUNNER_TOKEN_REFRESH_INTERVAL": "2s"}, func(c Config) bool {
			return c.TokenCacheTTL == 90*time.Second && c.TokenRefreshGap == 2*time.Second
		}},
		{"log level", env{"RUNNER_LOG_LEVEL": "debug"}, func(c Config) bool { return c.LogLevel == slog.LevelDebug }},
		{"lambda mode", env{"RUNNER_LAMBDA_MODE": "STREAM"}, func(c Config) bool { return c.LambdaMode == LambdaModeStream }},
		{"tracing off", env{}, func(c Config) bool { return !c.Tracing }},
		{"tracing none", env{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, func(c Config) bool { return !c.Tracing }},
		{"tracing otlp", env{"OTEL_TRACES_EXPORTER": "otlp"}, func(c Config) bool { return c.Tracing && c.TracesProtocol == TracesProtocolHTTP }},
		{"tracing grpc", env{"OTEL_TRACES_EXPORTER": "OTLP", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, func(c Config) bool {
			return c.Tracing && c.TracesProtocol == TracesProtocolGRPC
		}},
		{"traces protocol wins", env{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, func(c Config) bool {
			return c.Tracing && c.TracesProtocol == TracesProtocolHTTP
		}},
		{"sdk disabled", env{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, func(c Config) bool { return !c.Tracing }},
		{"timeout and reserve", env{"RUNNER_TIMEOUT_SECONDS": "60", "RUNNER_RESERVE_MS": "1500"}, func(c Config) bool {
			return c.Timeout == 60*time.Second && c.Reserve == 1500*time.Millisecond
		}},
		{"local memory", env{"RUNNER_MEMORY_MB": "1024"}, func(c Config) bool {
			return c.MemoryMB == 1024 && c.MemoryBudget == 0 && c.MaxOutputBytes == 0
		}},
		// The function's real memory size wins over the local setting.
		{"lambda memory", env{"RUNNER_MEMORY_MB": "1024", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048"}, func(c Config) bool {
			return c.MemoryMB == 2048
		}},
		{"small budget", env{"RUNNER_MEMORY_BUDGET_BYTES": "65536"}, func(c Config) bool {
			return c.MemoryBudget == 65536 && c.MaxOutputBytes == 0
		}},
		{"output cap", env{"RUNNER_MAX_OUTPUT_BYTES": "1000"}, func(c Config) bool { return c.MaxOutputBytes == 1000 }},
		{"stream bounds", env{"RUNNER_MAX_STREAM_BYTES": "1048576", "RUNNER_MAX_BUFFERED_STREAM_BYTES": "65536"}, func(c Config) bool {
			return c.MaxStreamBytes == 1<<20 && c.MaxBufferedStreamBytes == 64<<10
		}},
		{"code node bounds", env{"RUNNER_MAX_CODE_BYTES": "1024", "RUNNER_MAX_CODE_MEMORY_BYTES": "33554432", "RUNNER_MAX_CODE_LOG_BYTES": "4096"}, func(c Config) bool {
			return c.MaxCodeBytes == 1024 && c.MaxCodeMemory == 32<<20 && c.MaxCodeLogBytes == 4096
		}},
		{"expression budgets", env{"RUNNER_MAX_EXPR_STEPS": "5000", "RUNNER_MAX_EXPR_MEMORY_BYTES": "4096"}, func(c Config) bool {
			return c.MaxExprSteps == 5000 && c.MaxExprMemory == 4096
		}},
		{"limits", env{"RUNNER_MAX_NODES": "5", "RUNNER_MAX_CONCURRENCY": "2", "RUNNER_MAX_MAP_ITEMS": "7", "RUNNER_MAX_CHILD_DEPTH": "3",
			"RUNNER_MAX_EVENT_BYTES": "4096", "RUNNER_MAX_REQUEST_BYTES": "2048"}, func(c Config) bool {
			return c.MaxNodes == 5 && c.MaxConcurrency == 2 && c.MaxMapItems == 7 && c.MaxChildDepth == 3 &&
				c.MaxEventBytes == 4096 && c.MaxRequestBytes == 2048
		}},
		{"models", env{"RUNNER_MODELS": `[{"role":"general","provider":"openai","model":"m","baseUrl":"http://127.0.0.1:1"}]`}, func(c Config) bool {
			return reflect.DeepEqual(c.Models, []protocol.Model{{Role: "general", Provider: "openai", Model: "m", BaseURL: "http://127.0.0.1:1"}})
		}},
		{"allowed hosts", env{"RUNNER_ALLOWED_HOSTS": " Runner.Internal , *.svc.cluster.local,10.0.0.7, [FD00::1], *,runner_1"}, func(c Config) bool {
			return reflect.DeepEqual(c.AllowedHosts, []string{"runner.internal", "*.svc.cluster.local", "10.0.0.7", "fd00::1", "*", "runner_1"})
		}},
		{"admission", env{"RUNNER_MAX_EXECUTIONS": "12", "RUNNER_DRAIN_SECONDS": "40"}, func(c Config) bool {
			return c.MaxExecutions == 12 && c.DrainTimeout == 40*time.Second
		}},
		{"model endpoints", env{"RUNNER_MODEL_ENDPOINTS": "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com, http://10.0.0.5:8080/"}, func(c Config) bool {
			return reflect.DeepEqual(c.ModelEndpoints, []string{"https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com", "http://10.0.0.5:8080/"})
		}},
		{"http", env{"RUNNER_HTTP_ALLOW_CIDRS": "10.0.0.0/8, fd00::/8", "RUNNER_HTTP_MAX_RESPONSE_BYTES": "10", "RUNNER_HTTP_TIMEOUT_MS": "250"}, func(c Config) bool {
			return reflect.DeepEqual(c.HTTPAllowPrefixes, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}) &&
				c.HTTPMaxResponseBytes == 10 && c.HTTPTimeout == 250*time.Millisecond
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.env.get)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tt.check(c) {
				t.Errorf("Load(%v) = %+v", tt.env, c)
			}
		})
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		env   env
		names []string // every one must be in the error
	}{
		{env{"RUNNER_MAX_NODES": "many"}, []string{"RUNNER_MAX_NODES", `"many"`}},
		{env{"RUNNER_MAX_NODES": "0"}, []string{"RUNNER_MAX_NODES"}},
		{env{"RUNNER_MAX_CONCURRENCY": "100000"}, []string{"RUNNER_MAX_CONCURRENCY"}},
		{env{"RUNNER_MAX_MAP_ITEMS": "-1"}, []string{"RUNNER_MAX_MAP_ITEMS"}},
		{env{"RUNNER_MAX_CHILD_DEPTH": "1.5"}, []string{"RUNNER_MAX_CHILD_DEPTH"}},
		{env{"RUNNER_MAX_EVENT_BYTES": "10"}, []string{"RUNNER_MAX_EVENT_BYTES"}},
		{env{"RUNNER_MAX_STREAM_BYTES": "300000000"}, []string{"RUNNER_MAX_STREAM_BYTES"}},
		{env{"RUNNER_MAX_BUFFERED_STREAM_BYTES": "7000000"}, []string{"RUNNER_MAX_BUFFERED_STREAM_BYTES"}},
		{env{"RUNNER_MAX_STREAM_BYTES": "100"}, []string{"RUNNER_MAX_STREAM_BYTES"}},
		{env{"RUNNER_MAX_REQUEST_BYTES": "6MB"}, []string{"RUNNER_MAX_REQUEST_BYTES"}},
		{env{"RUNNER_MAX_OUTPUT_BYTES": "1"}, []string{"RUNNER_MAX_OUTPUT_BYTES"}},
		{env{"RUNNER_MAX_EXPR_STEPS": "10"}, []string{"RUNNER_MAX_EXPR_STEPS"}},
		{env{"RUNNER_MAX_EXPR_MEMORY_BYTES": "-1"}, []string{"RUNNER_MAX_EXPR_MEMORY_BYTES"}},
		{env{"RUNNER_MAX_CODE_MEMORY_BYTES": "1048576"}, []string{"RUNNER_MAX_CODE_MEMORY_BYTES"}},
		{env{"RUNNER_MAX_CODE_BYTES": "x"}, []string{"RUNNER_MAX_CODE_BYTES"}},
		{env{"RUNNER_MAX_CODE_LOG_BYTES": "0"}, []string{"RUNNER_MAX_CODE_LOG_BYTES"}},
		{env{"RUNNER_MEMORY_BUDGET_BYTES": "x"}, []string{"RUNNER_MEMORY_BUDGET_BYTES"}},
		{env{"RUNNER_MEMORY_MB": "64"}, []string{"RUNNER_MEMORY_MB"}},
		{env{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE"}},
		{env{"RUNNER_TIMEOUT_SECONDS": "0"}, []string{"RUNNER_TIMEOUT_SECONDS"}},
		{env{"RUNNER_RESERVE_MS": "soon"}, []string{"RUNNER_RESERVE_MS"}},
		{env{"RUNNER_TIMEOUT_SECONDS": "1", "RUNNER_RESERVE_MS": "1000"}, []string{"RUNNER_RESERVE_MS", "RUNNER_TIMEOUT_SECONDS"}},
		{env{"RUNNER_TOKEN_CACHE_TTL": "5"}, []string{"RUNNER_TOKEN_CACHE_TTL"}},
		{env{"RUNNER_TOKEN_REFRESH_INTERVAL": "-1s"}, []string{"RUNNER_TOKEN_REFRESH_INTERVAL"}},
		{env{"RUNNER_LOG_LEVEL": "loud"}, []string{"RUNNER_LOG_LEVEL"}},
		{env{"RUNNER_LAMBDA_MODE": "sometimes"}, []string{"RUNNER_LAMBDA_MODE"}},
		{env{"OTEL_TRACES_EXPORTER": "zipkin"}, []string{"OTEL_TRACES_EXPORTER", `"zipkin"`}},
		{env{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, []string{"OTEL_EXPORTER_OTLP_PROTOCOL", `"http/json"`}},
		{env{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"}, []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}},
		{env{"RUNNER_MODELS": `{"role":"general"}`}, []string{"RUNNER_MODELS"}},
		{env{"RUNNER_HTTP_ALLOW_CIDRS": "10.0.0.0/8,intranet"}, []string{"RUNNER_HTTP_ALLOW_CIDRS", `"intranet"`}},
		{env{"RUNNER_ALLOWED_HOSTS": "runner.internal:8080"}, []string{"RUNNER_ALLOWED_HOSTS", `"runner.internal:8080"`, "no scheme, port or path"}},
		{env{"RUNNER_ALLOWED_HOSTS": "http://runner"}, []string{"RUNNER_ALLOWED_HOSTS", `"http://runner"`}},
		{env{"RUNNER_ALLOWED_HOSTS": "a..b"}, []string{"RUNNER_ALLOWED_HOSTS", `"a..b"`}},
		{env{"RUNNER_ALLOWED_HOSTS": "*runner"}, []string{"RUNNER_ALLOWED_HOSTS", `"*runner"`}},
		{env{"RUNNER_ALLOWED_HOSTS": "*.*.x"}, []string{"RUNNER_ALLOWED_HOSTS", `"*.*.x"`}},
		{env{"RUNNER_ALLOWED_HOSTS": "-x.example"}, []string{"RUNNER_ALLOWED_HOSTS"}},
		{env{"RUNNER_ALLOWED_HOSTS": "fe80::1%eth0"}, []string{"RUNNER_ALLOWED_HOSTS"}},
		{env{"RUNNER_MAX_EXECUTIONS": "0"}, []string{"RUNNER_MAX_EXECUTIONS"}},
		{env{"RUNNER_DRAIN_SECONDS": "1m"}, []string{"RUNNER_DRAIN_SECONDS"}},
		{env{"RUNNER_MODEL_ENDPOINTS": "https://gw.example.com/v1"}, []string{"RUNNER_MODEL_ENDPOINTS", "not an origin"}},
		{env{"RUNNER_MODEL_ENDPOINTS": "https://u@gw.example.com"}, []string{"RUNNER_MODEL_ENDPOINTS", "not an origin"}},
		{env{"RUNNER_MODEL_ENDPOINTS": "gw.example.com"}, []string{"RUNNER_MODEL_ENDPOINTS", "not an origin"}},
		{env{"RUNNER_HTTP_MAX_RESPONSE_BYTES": "0"}, []string{"RUNNER_HTTP_MAX_RESPONSE_BYTES"}},
		{env{"RUNNER_HTTP_TIMEOUT_MS": "1m"}, []string{"RUNNER_HTTP_TIMEOUT_MS"}},
		// Every problem at once, not the first only.
		{env{"RUNNER_MAX_NODES": "x", "RUNNER_LOG_LEVEL": "y", "RUNNER_HTTP_TIMEOUT_MS": "z"}, []string{"RUNNER_MAX_NODES", "RUNNER_LOG_LEVEL", "RUNNER_HTTP_TIMEOUT_MS"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, "+"), func(t *testing.T) {
			_, err := Load(tt.env.get)
			if err == nil {
				t.Fatalf("Load(%v) accepted a bad value", tt.env)
			}
			for _, name := range tt.names {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
		})
	}
}

func TestLoadReportsEachProblemSeparately(t *testing.T) {
	_, err := Load(env{"RUNNER_MAX_NODES": "x", "RUNNER_MAX_MAP_ITEMS": "y"}.get)
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Fatalf("error %v: want the two problems joined", err)
	}
}

func TestLoadKeepsSecretsOutOfErrors(t *testing.T) {
	// A malformed model table may hold API keys: the error says what is
	// wrong, never what was written.
	_, err := Load(env{"RUNNER_MODELS": `[{"role":"general","apiKey":"sk-secret-123",}]`}.get)
	if err == nil || strings.Contains(err.Error(), "sk-secret-123") {
		t.Errorf("error %v: want a refusal that does not quote the key", err)
	}
}
