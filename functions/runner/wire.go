package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// newHandler builds the engine and the handler from the configuration.
func newHandler(ctx context.Context, cfg config.Config, src functions.TokenSource, logger *slog.Logger) (*functions.Handler, error) {
	limits := engine.Limits{
		MaxNodes:       cfg.MaxNodes,
		MaxConcurrency: cfg.MaxConcurrency,
		MaxMapItems:    cfg.MaxMapItems,
		MaxChildDepth:  cfg.MaxChildDepth,
		MaxEventBytes:  cfg.MaxEventBytes,
		MaxOutputBytes: cfg.MaxOutputBytes,
		MemoryBudget:   cfg.MemoryBudget,
		MaxDuration:    cfg.Timeout,
		Reserve:        cfg.Reserve,
	}
	eng := engine.New(limits)
	eng.Logger = logger
	return &functions.Handler{
		Tokens:          src,
		Engine:          eng,
		Capabilities:    capabilities(cfg, eng),
		MaxRequestBytes: cfg.MaxRequestBytes,
		Logger:          logger,
	}, nil
}

// capabilities describes this deployment from the same values the engine
// enforces.
func capabilities(cfg config.Config, eng *engine.Engine) protocol.Capabilities {
	l := eng.Limits
	types := eng.NodeTypes()
	has := func(t string) bool {
		for _, n := range types {
			if n == t {
				return true
			}
		}
		return false
	}
	roles := []string{}
	for _, m := range cfg.Models {
		roles = append(roles, m.Role)
	}
	providers := []string{}
	if has("model") || has("agent") {
		providers = []string{"openai", "anthropic", "bedrock"}
	}
	transports := []string{}
	if has("tool") || has("agent") {
		transports = []string{"streamable-http"}
	}
	return protocol.Capabilities{
		Version:          protocol.Version,
		ProtocolVersions: []int{protocol.Version},
		Runner:           protocol.RunnerInfo{Name: "runnerd-lambda", Version: version},
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
			MaxDurationMs:   cfg.MaxDuration().Milliseconds(),
			MemoryMb:        cfg.MemoryMB,
			MaxRequestBytes: cfg.MaxRequestBytes,
			MaxNodes:        l.MaxNodes,
			MaxConcurrency:  l.MaxConcurrency,
			MaxMapItems:     l.MaxMapItems,
			MaxChildDepth:   l.MaxChildDepth,
			MaxEventBytes:   l.MaxEventBytes,
			MaxOutputBytes:  l.MaxOutputBytes,
			MemoryBudget:    l.MemoryBudget,
		},
	}
}

// secretsSource reads tokens from Secrets Manager with the function's role.
// AWS_ENDPOINT_URL_SECRETS_MANAGER points it elsewhere (tests, VPC
// endpoints).
func secretsSource(ctx context.Context, cfg config.Config) (functions.TokenSource, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
		o.RetryMaxAttempts = 2
		o.RetryMode = aws.RetryModeStandard
	})
	return secrets.New(client, secrets.Options{
		SecretID:        cfg.TokenSecretID,
		TTL:             cfg.TokenCacheTTL,
		RefreshInterval: cfg.TokenRefreshGap,
	}), nil
}
