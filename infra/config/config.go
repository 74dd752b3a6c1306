// Package config reads the runner's configuration from the environment into
// one typed value. Nothing else in the runner calls os.Getenv.
//
// Config only reads and range-checks: a setting whose variable is unset is
// left zero, which the package that uses it (engine.Limits, egress.Options,
// secrets.Options, functions.Handler) reads as its own default. So each
// default is written once, beside the code it bounds.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Config is every setting of a runner process.
type Config struct {
	// Lambda is true under the Lambda runtime (AWS_LAMBDA_RUNTIME_API set).
	Lambda     bool
	RuntimeAPI string
	// LambdaMode (RUNNER_LAMBDA_MODE) picks how Lambda HTTP events are
	// answered: "auto" (default) by the event's shape, "stream" or
	// "buffered" for every payload-v2 event. See LambdaModeAuto.
	LambdaMode string
	// FunctionName (AWS_LAMBDA_FUNCTION_NAME) is the metrics' FunctionName
	// dimension, which keeps two stacks in one account apart.
	FunctionName string

	Addr            string        // RUNNER_ADDR: local server address
	Tokens          []string      // RUNNER_TOKENS: comma-separated bearer tokens
	TokenSecretID   string        // RUNNER_TOKEN_SECRET_ID: Secrets Manager secret of tokens
	TokenCacheTTL   time.Duration // RUNNER_TOKEN_CACHE_TTL (0: secrets.DefaultTTL)
	TokenRefreshGap time.Duration // RUNNER_TOKEN_REFRESH_INTERVAL: min gap of miss-triggered refreshes (0: secrets.DefaultRefreshInterval)
	LogLevel        slog.Level    // RUNNER_LOG_LEVEL
	// CodeWorker (RUNNER_CODE_WORKER) is the path of the code nodes'
	// worker executable; "" means codeworker beside the runner's own.
	CodeWorker string
	// Dev is the runner's -dev flag (set by its main, not read from the
	// environment): a generated token, text logs, the API answering only
	// to the loopback's names unless AllowedHosts says more, and no code
	// node rather than no start when the code nodes' worker is missing.
	Dev bool
	// AllowedHosts (RUNNER_ALLOWED_HOSTS) are the Host names the local
	// server's API answers to, lower case: names, IP addresses (IPv6
	// without brackets), "*.suffix" patterns, or "*" for any. Empty: any
	// name, but only the loopback's under -dev.
	AllowedHosts []string
	// MaxExecutions (RUNNER_MAX_EXECUTIONS) bounds the executions a local
	// server runs at once (0: functions.DefaultMaxExecutions).
	MaxExecutions int
	// DrainTimeout (RUNNER_DRAIN_SECONDS) is how long a local server
	// stopped by a signal waits for its executions before cancelling them
	// (0: the runner's default).
	DrainTimeout time.Duration

	MemoryMB        int           // AWS_LAMBDA_FUNCTION_MEMORY_SIZE, else RUNNER_MEMORY_MB (0: engine.DefaultMemoryMB)
	Timeout         time.Duration // RUNNER_TIMEOUT_SECONDS: the function's configured timeout (0: engine.DefaultMaxDuration)
	Reserve         time.Duration // RUNNER_RESERVE_MS: kept back to write the terminal event (0: engine.DefaultReserve)
	MaxRequestBytes int64         // RUNNER_MAX_REQUEST_BYTES (0: functions.DefaultMaxRequestBytes)
	// RUNNER_MAX_STREAM_BYTES, RUNNER_MAX_BUFFERED_STREAM_BYTES: event
	// stream bounds, streamed and buffered (0: functions.DefaultMaxStreamBytes,
	// functions.DefaultMaxBufferedStreamBytes).
	MaxStreamBytes         int64
	MaxBufferedStreamBytes int64
	BodyReadTimeout        time.Duration // RUNNER_BODY_READ_TIMEOUT_MS: reading a request body off a connection (0: functions.DefaultBodyReadTimeout)

	// Execution limits, each 0 for the engine's default (engine.Limits).

	MaxNodes       int   // RUNNER_MAX_NODES
	MaxConcurrency int   // RUNNER_MAX_CONCURRENCY
	MaxMapItems    int   // RUNNER_MAX_MAP_ITEMS
	MaxChildDepth  int   // RUNNER_MAX_CHILD_DEPTH
	MaxDepth       int   // RUNNER_MAX_DEPTH: nesting of a request body
	MaxSchemaDepth int   // RUNNER_MAX_SCHEMA_DEPTH: nesting of an input JSON Schema
	MaxSchemaBytes int   // RUNNER_MAX_SCHEMA_BYTES: size of an input JSON Schema
	MaxExpressions int   // RUNNER_MAX_EXPRESSIONS: expressions compiled for one request
	MaxEventBytes  int   // RUNNER_MAX_EVENT_BYTES
	MaxOutputBytes int64 // RUNNER_MAX_OUTPUT_BYTES
	MemoryBudget   int64 // RUNNER_MEMORY_BUDGET_BYTES (0: a quarter of MemoryMB)
	MaxExprSteps   int64 // RUNNER_MAX_EXPR_STEPS: steps of one expression evaluation
	MaxExprMemory  int64 // RUNNER_MAX_EXPR_MEMORY_BYTES: bytes one evaluation may allocate
	// MaxFanOutInvocations (RUNNER_MAX_FANOUT_INVOCATIONS) is the most
	// child invocations a distributed map runs at once; 0 turns
	// distribution off.
	MaxFanOutInvocations int
	// FanOutFunction (RUNNER_FANOUT_FUNCTION) is the function name or ARN
	// distributed maps invoke; empty: the function itself, at its version
	// (AWS_LAMBDA_FUNCTION_NAME, AWS_LAMBDA_FUNCTION_VERSION).
	FanOutFunction string
	// FunctionVersion is AWS_LAMBDA_FUNCTION_VERSION, the qualifier of a
	// fan-out to the function itself.
	FunctionVersion string
	// Code nodes: the size of with.code, the memory of one evaluation (its
	// sandbox worker's kernel limit) and the bytes its console.log may write.
	MaxCodeBytes    int   // RUNNER_MAX_CODE_BYTES
	MaxCodeMemory   int64 // RUNNER_MAX_CODE_MEMORY_BYTES
	MaxCodeLogBytes int64 // RUNNER_MAX_CODE_LOG_BYTES

	Models []protocol.Model // RUNNER_MODELS: the deployment's model table, JSON
	// ModelEndpoints (RUNNER_MODEL_ENDPOINTS) are the origins
	// ("https://host[:port]") a Bedrock entry's baseUrl may name without
	// an apiKey of its own: the function's AWS credentials go there.
	ModelEndpoints []string

	HTTPAllowPrefixes    []netip.Prefix // RUNNER_HTTP_ALLOW_CIDRS: private ranges http nodes may reach
	HTTPMaxResponseBytes int64          // RUNNER_HTTP_MAX_RESPONSE_BYTES (0: egress.DefaultMaxResponseBytes)
	HTTPTimeout          time.Duration  // RUNNER_HTTP_TIMEOUT_MS (0: egress.DefaultTimeout)

	// Tracing is on when OTEL_TRACES_EXPORTER is "otlp" (and
	// OTEL_SDK_DISABLED is not "true"); unset or "none" it is off. The
	// choice, the protocol and the OTLP/HTTP exporter's settings are read
	// here; the SDK reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
	// OTEL_TRACES_SAMPLER and OTEL_BSP_* itself, and the gRPC exporter of
	// a TRACING=grpc build its OTEL_EXPORTER_OTLP_* settings, as the
	// OpenTelemetry specification names them.
	Tracing bool
	// TracesProtocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
	// OTEL_EXPORTER_OTLP_PROTOCOL: TracesProtocolHTTP (the default) or
	// TracesProtocolGRPC.
	TracesProtocol string
	// OTLP is the OTLP/HTTP exporter's settings (TracesProtocolHTTP only).
	OTLP OTLP
}

// The OTLP protocols the runner exports traces with.
const (
	TracesProtocolHTTP = "http/protobuf"
	TracesProtocolGRPC = "grpc"
)

// The values of RUNNER_LAMBDA_MODE.
//
// A function URL sends the same event whether its invoke mode is
// RESPONSE_STREAM or BUFFERED, so the event cannot tell which answer Lambda
// expects. Auto streams payload-v2 events from a function URL domain
// (*.lambda-url.*) and buffers everything else (API Gateway REST and HTTP
// APIs, ALB, sam local start-api); stream and buffered override that choice
// for payload-v2 events, buffered being the one a BUFFERED function URL
// needs.
const (
	LambdaModeAuto     = "auto"
	LambdaModeStream   = "stream"
	LambdaModeBuffered = "buffered"
)

// Load reads the configuration through getenv (os.Getenv in main). Every
// problem is reported, each naming its variable.
func Load(getenv func(string) string) (Config, error) {
	r := reader{getenv: getenv}
	c := Config{
		RuntimeAPI:             getenv("AWS_LAMBDA_RUNTIME_API"),
		FunctionName:           strings.TrimSpace(getenv("AWS_LAMBDA_FUNCTION_NAME")),
		Addr:                   r.str("RUNNER_ADDR", "127.0.0.1:8080"),
		Tokens:                 splitList(getenv("RUNNER_TOKENS")),
		TokenSecretID:          strings.TrimSpace(getenv("RUNNER_TOKEN_SECRET_ID")),
		CodeWorker:             strings.TrimSpace(getenv("RUNNER_CODE_WORKER")),
		MaxExecutions:          r.int("RUNNER_MAX_EXECUTIONS", 1, 100_000),
		DrainTimeout:           time.Duration(r.int("RUNNER_DRAIN_SECONDS", 1, 86400)) * time.Second,
		TokenCacheTTL:          r.duration("RUNNER_TOKEN_CACHE_TTL"),
		TokenRefreshGap:        r.duration("RUNNER_TOKEN_REFRESH_INTERVAL"),
		LogLevel:               r.level("RUNNER_LOG_LEVEL"),
		Timeout:                time.Duration(r.int("RUNNER_TIMEOUT_SECONDS", 1, 86400)) * time.Second,
		Reserve:                time.Duration(r.int("RUNNER_RESERVE_MS", 50, 60_000)) * time.Millisecond,
		MaxRequestBytes:        r.int64("RUNNER_MAX_REQUEST_BYTES", 1024),
		MaxStreamBytes:         r.int64Range("RUNNER_MAX_STREAM_BYTES", 64<<10, 200<<20),
		MaxBufferedStreamBytes: r.int64Range("RUNNER_MAX_BUFFERED_STREAM_BYTES", 64<<10, 6<<20),
		BodyReadTimeout:        time.Duration(r.int("RUNNER_BODY_READ_TIMEOUT_MS", 100, 300_000)) * time.Millisecond,
		MaxNodes:               r.int("RUNNER_MAX_NODES", 1, 1_000_000),
		MaxConcurrency:         r.int("RUNNER_MAX_CONCURRENCY", 1, 1024),
		MaxMapItems:            r.int("RUNNER_MAX_MAP_ITEMS", 1, 1_000_000),
		MaxChildDepth:          r.int("RUNNER_MAX_CHILD_DEPTH", 1, 64),
		MaxDepth:               r.int("RUNNER_MAX_DEPTH", 8, 10_000),
		MaxSchemaDepth:         r.int("RUNNER_MAX_SCHEMA_DEPTH", 2, 1_000),
		MaxSchemaBytes:         r.int("RUNNER_MAX_SCHEMA_BYTES", 64, 16<<20),
		MaxExpressions:         r.int("RUNNER_MAX_EXPRESSIONS", 1, 1_000_000),
		MaxEventBytes:          r.int("RUNNER_MAX_EVENT_BYTES", 256, 16<<20),
		MemoryBudget:           r.int64("RUNNER_MEMORY_BUDGET_BYTES", 1024),
		MaxOutputBytes:         r.int64("RUNNER_MAX_OUTPUT_BYTES", 256),
		MaxExprSteps:           r.int64("RUNNER_MAX_EXPR_STEPS", 1_000),
		MaxExprMemory:          r.int64("RUNNER_MAX_EXPR_MEMORY_BYTES", 1024),
		MaxFanOutInvocations:   r.int("RUNNER_MAX_FANOUT_INVOCATIONS", 0, 10_000),
		FanOutFunction:         strings.TrimSpace(getenv("RUNNER_FANOUT_FUNCTION")),
		FunctionVersion:        strings.TrimSpace(getenv("AWS_LAMBDA_FUNCTION_VERSION")),
		MaxCodeBytes:           r.int("RUNNER_MAX_CODE_BYTES", 16, 16<<20),
		MaxCodeMemory:          r.int64Range("RUNNER_MAX_CODE_MEMORY_BYTES", 16<<20, 1<<40),
		MaxCodeLogBytes:        r.int64("RUNNER_MAX_CODE_LOG_BYTES", 256),

		HTTPMaxResponseBytes: r.int64("RUNNER_HTTP_MAX_RESPONSE_BYTES", 1),
		HTTPTimeout:          time.Duration(r.int("RUNNER_HTTP_TIMEOUT_MS", 1, 900_000)) * time.Millisecond,
	}
	c.Lambda = c.RuntimeAPI != ""
	switch c.LambdaMode = strings.ToLower(r.str("RUNNER_LAMBDA_MODE", LambdaModeAuto)); c.LambdaMode {
	case LambdaModeAuto, LambdaModeStream, LambdaModeBuffered:
	default:
		r.errs = append(r.errs, fmt.Errorf("RUNNER_LAMBDA_MODE: %q must be auto, stream or buffered", c.LambdaMode))
	}
	c.MemoryMB = r.int("RUNNER_MEMORY_MB", 128, 10240)
	if getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE") != "" {
		c.MemoryMB = r.int("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", 128, 10240)
	}
	// Unset, either is the engine's default, and every allowed reserve
	// (at most 60s) is below the default timeout (15 minutes) and every
	// allowed timeout (at least 1s) above the default reserve (500ms).
	if c.Timeout > 0 && c.Reserve > 0 && c.Reserve >= c.Timeout {
		r.errs = append(r.errs, fmt.Errorf("RUNNER_RESERVE_MS (%s) must be less than RUNNER_TIMEOUT_SECONDS (%s)", c.Reserve, c.Timeout))
	}
	if raw := strings.TrimSpace(getenv("RUNNER_MODELS")); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c.Models); err != nil {
			r.errs = append(r.errs, fmt.Errorf("RUNNER_MODELS: must be a JSON array of {role, provider, model, ...}: %v", err))
		}
	}
	for _, h := range splitList(getenv("RUNNER_ALLOWED_HOSTS")) {
		p, err := hostPattern(h)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("RUNNER_ALLOWED_HOSTS: %w", err))
			continue
		}
		c.AllowedHosts = append(c.AllowedHosts, p)
	}
	for i, s := range splitList(getenv("RUNNER_MODEL_ENDPOINTS")) {
		// An origin, nothing more: the credentials go to a host, whatever
		// path a request adds.
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			// Not quoted: it may hold user information.
			r.errs = append(r.errs, fmt.Errorf("RUNNER_MODEL_ENDPOINTS: entry %d is not an origin such as https://vpce-0123.bedrock-runtime.us-east-1.vpce.amazonaws.com (scheme and host only)", i+1))
			continue
		}
		c.ModelEndpoints = append(c.ModelEndpoints, s)
	}
	for _, s := range splitList(getenv("RUNNER_HTTP_ALLOW_CIDRS")) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("RUNNER_HTTP_ALLOW_CIDRS: %q is not a CIDR prefix", s))
			continue
		}
		c.HTTPAllowPrefixes = append(c.HTTPAllowPrefixes, p)
	}
	if c.MaxFanOutInvocations > 0 && !c.Lambda && c.FanOutFunction == "" {
		r.errs = append(r.errs, errors.New("RUNNER_MAX_FANOUT_INVOCATIONS: outside Lambda, distributed maps need RUNNER_FANOUT_FUNCTION (a function name or ARN, with AWS_ENDPOINT_URL_LAMBDA for a local endpoint)"))
	}
	r.tracing(&c)
	return c, errors.Join(r.errs...)
}

// tracing reads the OpenTelemetry variables the runner acts on. Exporters
// other than otlp are refused rather than ignored, so a typo does not
// silently leave tracing off.
func (r *reader) tracing(c *Config) {
	if strings.EqualFold(strings.TrimSpace(r.getenv("OTEL_SDK_DISABLED")), "true") {
		return
	}
	for _, e := range splitList(r.getenv("OTEL_TRACES_EXPORTER")) {
		switch strings.ToLower(e) {
		case "none":
		case "otlp":
			c.Tracing = true
		default:
			r.errs = append(r.errs, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported (otlp or none)", e))
		}
	}
	if !c.Tracing {
		return
	}
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	p := strings.TrimSpace(r.getenv(name))
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(r.getenv(name))
	}
	switch c.TracesProtocol = strings.ToLower(p); c.TracesProtocol {
	case "":
		c.TracesProtocol = TracesProtocolHTTP
	case TracesProtocolHTTP, TracesProtocolGRPC:
	default:
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not supported (http/protobuf or grpc)", name, p))
	}
	if c.TracesProtocol == TracesProtocolHTTP {
		c.OTLP = r.otlp()
	}
}

type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

// int reads a whole number from lo to hi; unset (or invalid, reported) is 0.
func (r *reader) int(name string, lo, hi int) int {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.errs = append(r.errs, fmt.Errorf("%s: %q must be a whole number from %d to %d", name, v, lo, hi))
		return 0
	}
	return n
}

// int64 reads a whole number of at least lo; unset (or invalid, reported)
// is 0.
func (r *reader) int64(name string, lo int64) int64 {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo {
		r.errs = append(r.errs, fmt.Errorf("%s: %q must be a whole number of at least %d", name, v, lo))
		return 0
	}
	return n
}

// int64Range reads a whole number in [lo, hi]; unset (or invalid,
// reported) is 0.
func (r *reader) int64Range(name string, lo, hi int64) int64 {
	n := r.int64(name, lo)
	if n > hi {
		r.errs = append(r.errs, fmt.Errorf("%s: %d must be at most %d", name, n, hi))
		return 0
	}
	return n
}

// duration reads a positive duration; unset (or invalid, reported) is 0.
func (r *reader) duration(name string) time.Duration {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.errs = append(r.errs, fmt.Errorf("%s: %q must be a positive duration such as 5m or 30s", name, v))
		return 0
	}
	return d
}

func (r *reader) level(name string) slog.Level {
	var l slog.Level
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return slog.LevelInfo
	}
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %q must be debug, info, warn or error", name, v))
		return slog.LevelInfo
	}
	return l
}

// hostPattern checks one entry of RUNNER_ALLOWED_HOSTS and returns it in
// lower case, an IPv6 address without its brackets.
func hostPattern(s string) (string, error) {
	s = strings.ToLower(s)
	if s == "*" {
		return s, nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil && a.Zone() == "" {
		return a.String(), nil
	}
	name := strings.TrimPrefix(s, "*.")
	if !hostName(name) {
		return "", fmt.Errorf("%q is not a host name, an IP address, a *.suffix pattern or * (no scheme, port or path)", s)
	}
	return s, nil
}

// hostName reports whether s is a DNS name: dot-separated labels of
// letters, digits, '-' and '_', none empty or longer than 63 bytes.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
