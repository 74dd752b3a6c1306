package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/models"
	_ "github.com/runnerd/lambda-runner/engine/nodes" // the built-in node kinds
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/functions/wiring"
	"github.com/runnerd/lambda-runner/infra/awsconfig"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/secrets"
	"github.com/runnerd/lambda-runner/infra/telemetry"
	"github.com/runnerd/lambda-runner/protocol"
)

// limits are the engine's limits from the configuration; zero fields
// (unset variables) are the engine's defaults.
func limits(cfg config.Config) engine.Limits {
	return engine.Limits{
		MaxNodes:        cfg.MaxNodes,
		MaxConcurrency:  cfg.MaxConcurrency,
		MaxMapItems:     cfg.MaxMapItems,
		MaxChildDepth:   cfg.MaxChildDepth,
		MaxDepth:        cfg.MaxDepth,
		MaxSchemaDepth:  cfg.MaxSchemaDepth,
		MaxSchemaBytes:  cfg.MaxSchemaBytes,
		MaxExpressions:  cfg.MaxExpressions,
		MaxEventBytes:   cfg.MaxEventBytes,
		MaxOutputBytes:  cfg.MaxOutputBytes,
		MemoryMB:        cfg.MemoryMB,
		MemoryBudget:    cfg.MemoryBudget,
		MaxExprSteps:    cfg.MaxExprSteps,
		MaxExprMemory:   cfg.MaxExprMemory,
		MaxCodeBytes:    cfg.MaxCodeBytes,
		MaxCodeMemory:   cfg.MaxCodeMemory,
		MaxCodeLogBytes: cfg.MaxCodeLogBytes,
		MaxDuration:     cfg.Timeout,
		Reserve:         cfg.Reserve,

		MaxFanOutInvocations: cfg.MaxFanOutInvocations,
	}
}

// codeRunner is the code nodes' sandbox (codePool). A missing worker stops
// the runner, except under -dev (go run ./functions/runner -dev, where no
// worker was built): there it is said once, as a warning, and the runner
// starts without code nodes, which its capabilities then leave out (a
// code node is a 400 naming the node).
func codeRunner(cfg config.Config, l engine.Limits, logger *slog.Logger) (engine.CodeRunner, error) {
	code, err := codePool(cfg, l.WithDefaults())
	if err != nil && cfg.Dev {
		logger.Warn("code nodes are off: no sandbox worker (make run builds one)", "err", err)
		return nil, nil
	}
	return code, err
}

// newHandler builds the engine and the handler from the configuration.
// Under Lambda, per-execution metrics go to stdout as CloudWatch Embedded
// Metric Format lines (the function's log stream, where CloudWatch extracts
// them); a local server writes none. tr, when not nil, traces executions
// and propagates their trace context to every outbound request.
func newHandler(ctx context.Context, cfg config.Config, src functions.TokenSource, logger *slog.Logger, stdout io.Writer, tr *telemetry.Tracing) (*functions.Handler, error) {
	limits := limits(cfg)
	eng := engine.New(limits)
	eng.Logger = logger
	var wrap func(http.RoundTripper) http.RoundTripper
	if tr != nil {
		eng.Observer = tr.Observer()
		wrap = telemetry.Propagating
	}
	svc, err := services(ctx, cfg, wrap)
	if err != nil {
		return nil, err
	}
	eng.Services = svc
	if eng.Services.Code, err = codeRunner(cfg, eng.Limits, logger); err != nil {
		return nil, err
	}
	h := &functions.Handler{
		Tokens:                 src,
		Engine:                 eng,
		MaxRequestBytes:        cfg.MaxRequestBytes,
		BodyReadTimeout:        cfg.BodyReadTimeout,
		MaxStreamBytes:         cfg.MaxStreamBytes,
		MaxBufferedStreamBytes: cfg.MaxBufferedStreamBytes,
		Logger:                 logger,
	}
	if !cfg.Lambda {
		// Under Lambda each execution is an invocation in an instance
		// of its own: the function's concurrency bounds them.
		h.MaxExecutions = cfg.MaxExecutions
		if h.MaxExecutions == 0 {
			h.MaxExecutions = functions.DefaultMaxExecutions(limits)
		}
	}
	h.Capabilities = capabilities(eng, h)
	if cfg.Lambda {
		m := telemetry.NewMetrics(stdout, cfg.FunctionName)
		m.Version = cfg.FunctionVersion
		h.OnExecution = m.OnExecution
		h.OnResponse = m.OnResponse
	}
	return h, nil
}

// capabilities describes this deployment from the same values the engine
// and the handler enforce, defaults applied.
func capabilities(eng *engine.Engine, h *functions.Handler) protocol.Capabilities {
	maxRequestBytes := h.RequestLimit()
	streamed, buffered := h.StreamLimits()
	l := eng.Limits.WithDefaults()
	types := eng.NodeTypes()
	has := func(t string) bool { return slices.Contains(types, t) }
	// What model and agent nodes can really use: the providers compiled
	// into this build (build tags, docs/deploy.md), and the roles of the
	// deployment's validated table.
	roles := []string{}
	providers := []string{}
	if has("model") || has("agent") {
		roles = eng.ModelRoles()
		providers = models.Providers()
	}
	transports := []string{}
	if has("tool") || has("agent") {
		transports = []string{toolsets.TransportStreamableHTTP}
	}
	return protocol.Capabilities{
		Version:          protocol.Version,
		ProtocolVersions: []int{protocol.Version},
		Runner:           protocol.RunnerInfo{Name: runnerName, Version: version},
		NodeTypes:        types,
		Runtime: protocol.RuntimeCapabilities{
			Models:           protocol.ModelCapabilities{Providers: providers, Roles: roles},
			Toolsets:         protocol.ToolsetCapabilities{Transports: transports},
			Workflows:        has("workflow"),
			HTTP:             has("http"),
			Checkpoints:      false,
			PersistentValues: false,
			Consent:          "suspend",
		},
		Streaming: protocol.Streaming{ContentType: protocol.ContentTypeNDJSON},
		Constraints: protocol.Constraints{
			MaxDurationMs:          l.ExecutionTime().Milliseconds(),
			MemoryMb:               l.MemoryMB,
			MaxRequestBytes:        maxRequestBytes,
			MaxNodes:               l.MaxNodes,
			MaxConcurrency:         l.MaxConcurrency,
			MaxMapItems:            l.MaxMapItems,
			MaxChildDepth:          l.MaxChildDepth,
			MaxDepth:               l.MaxDepth,
			MaxSchemaDepth:         l.MaxSchemaDepth,
			MaxSchemaBytes:         l.MaxSchemaBytes,
			MaxExpressions:         l.MaxExpressions,
			MaxEventBytes:          l.MaxEventBytes,
			MaxStreamBytes:         streamed,
			MaxBufferedStreamBytes: buffered,
			MaxOutputBytes:         l.MaxOutputBytes,
			MemoryBudget:           l.MemoryBudget,
			MaxExprSteps:           l.MaxExprSteps,
			MaxExprMemory:          l.MaxExprMemory,
			MaxFanOutInvocations:   l.MaxFanOutInvocations,
			MaxCodeBytes:           l.MaxCodeBytes,
			MaxCodeMemory:          l.MaxCodeMemory,
			MaxCodeLogBytes:        l.MaxCodeLogBytes,
			MaxExecutions:          h.MaxExecutions,
		},
	}
}

// services configures the engine's runtime services (wiring.Services),
// distributed maps through this build's fanOut.
func services(ctx context.Context, cfg config.Config, wrap func(http.RoundTripper) http.RoundTripper) (engine.Services, error) {
	return wiring.Services(ctx, cfg, wiring.Options{Name: runnerName, Version: version, Wrap: wrap, FanOut: fanOut})
}

// newTracing starts the trace pipeline when cfg turns tracing on, and
// returns nil (tracing off, no cost) otherwise.
func newTracing(ctx context.Context, cfg config.Config) (*telemetry.Tracing, error) {
	if !cfg.Tracing {
		return nil, nil
	}
	name := cfg.FunctionName
	if name == "" {
		name = runnerName
	}
	tr, err := telemetry.NewTracing(ctx, telemetry.TracingOptions{
		Protocol: cfg.TracesProtocol, ServiceName: name, ServiceVersion: version,
		URL: cfg.OTLP.URL, Headers: cfg.OTLP.Headers, Timeout: cfg.OTLP.Timeout, Gzip: cfg.OTLP.Gzip,
		CertificateFile: cfg.OTLP.CertificateFile, ClientCertificateFile: cfg.OTLP.ClientCertificateFile, ClientKeyFile: cfg.OTLP.ClientKeyFile,
	})
	if err != nil {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %w", err)
	}
	return tr, nil
}

// served is what the server or the Lambda adapters serve: h, reading each
// request's traceparent when tracing is on.
func served(h http.Handler, tr *telemetry.Tracing) http.Handler {
	if tr == nil {
		return h
	}
	return telemetry.TraceRequests(h)
}

// secretsSource reads tokens from Secrets Manager with the function's role.
// AWS_ENDPOINT_URL_SECRETS_MANAGER points it elsewhere (tests, VPC
// endpoints). The AWS configuration and the client are built on the first
// token check, which reads the secret anyway, not at start: cold start
// (Lambda's INIT) does not wait for them.
func secretsSource(cfg config.Config) functions.TokenSource {
	return secrets.New(&lazySecrets{}, secrets.Options{
		SecretID:        cfg.TokenSecretID,
		TTL:             cfg.TokenCacheTTL,
		RefreshInterval: cfg.TokenRefreshGap,
	})
}

// lazySecrets is a Secrets Manager client built on its first call. An error
// loading the AWS configuration (a malformed AWS_* variable or shared
// config file) does not change while the process lives, so it is kept and
// every call fails with it: the source then fails closed.
type lazySecrets struct {
	once   sync.Once
	client *secretsmanager.Client
	err    error
}

func (l *lazySecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	l.once.Do(func() {
		// Without the request's cancellation: what is loaded is kept.
		awsCfg, err := awsconfig.Load(context.WithoutCancel(ctx))
		if err != nil {
			l.err = fmt.Errorf("AWS configuration: %w", err)
			return
		}
		l.client = secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
			o.RetryMaxAttempts = 2
			o.RetryMode = aws.RetryModeStandard
		})
	})
	if l.err != nil {
		return nil, l.err
	}
	return l.client.GetSecretValue(ctx, in, optFns...)
}
