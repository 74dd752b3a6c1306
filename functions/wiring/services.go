// Package wiring builds the engine's runtime services from the runner's
// configuration: the one place the runner (functions/runner) and
// `runnerctl test`, which runs workflows in process, both get them from.
package wiring

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/infra/awsconfig"
	"github.com/runnerd/lambda-runner/infra/config"
)

// Options are what a caller adds to the configuration.
type Options struct {
	// Name and Version are how the runner names itself to MCP servers.
	Name, Version string
	// Wrap, when not nil, wraps every guarded transport (the trace
	// context, when tracing is on).
	Wrap func(http.RoundTripper) http.RoundTripper
	// FanOut builds the distributed maps' invoker when
	// cfg.MaxFanOutInvocations is above 0; nil means none can run.
	FanOut func(cfg config.Config, hc *http.Client) (engine.FanOut, error)
	// Dial, when not nil, makes every connection of models, toolsets and
	// http nodes (egress.Options.Dial): `runnerctl test` only.
	Dial func(ctx context.Context, addr string, tls bool) (net.Conn, error)
	// LoadAWSConfig replaces the AWS configuration Bedrock uses; nil
	// means the function's (infra/awsconfig).
	LoadAWSConfig func(ctx context.Context) (aws.Config, error)
}

// Services configures the engine's runtime services. The deployment's
// model table (RUNNER_MODELS) is validated here, so that a bad one stops
// the process at startup with every problem named under the variable,
// instead of failing executions. The Lambda runtime API and link-local
// (metadata) addresses are never reachable from http nodes, toolsets or
// model providers, whatever a policy or RUNNER_HTTP_ALLOW_CIDRS says.
func Services(ctx context.Context, cfg config.Config, o Options) (engine.Services, error) {
	loadAWS := o.LoadAWSConfig
	if loadAWS == nil {
		loadAWS = awsconfig.Load
	}
	var table *models.Table
	clients := &models.Clients{LoadAWSConfig: loadAWS, TrustedEndpoints: cfg.ModelEndpoints}
	if len(cfg.Models) > 0 {
		t, err := models.NewTable("RUNNER_MODELS", cfg.Models)
		if err == nil {
			// The deployment's entries are held to the rule of the
			// request's: the role's credentials go only to AWS and to
			// RUNNER_MODEL_ENDPOINTS.
			err = clients.CheckCredentials("RUNNER_MODELS", cfg.Models)
		}
		if err != nil {
			return engine.Services{}, fmt.Errorf("configuration: %w", err)
		}
		table = t
	}
	blocked, err := egress.RuntimeAPIAddrs(ctx, cfg.RuntimeAPI)
	if err != nil {
		return engine.Services{}, fmt.Errorf("AWS_LAMBDA_RUNTIME_API: %w", err)
	}
	httpOpts := egress.Options{
		MaxResponseBytes: cfg.HTTPMaxResponseBytes,
		Timeout:          cfg.HTTPTimeout,
		AllowPrefixes:    cfg.HTTPAllowPrefixes,
		Blocked:          blocked,
		Wrap:             o.Wrap,
		Dial:             o.Dial,
	}
	// One guard for every connection an execution makes: http nodes dial
	// through egress.Client (built per execution from httpOpts), toolsets
	// and model providers through the shared endpoint client. Wrap (the
	// trace context, when tracing is on) sits above the guard in both.
	endpoints := egress.NewEndpoints(httpOpts, o.Wrap)
	clients.HTTPClient, clients.CheckEndpoint = endpoints.Client(), endpoints.Check
	var fo engine.FanOut
	if cfg.MaxFanOutInvocations > 0 && o.FanOut != nil {
		if fo, err = o.FanOut(cfg, endpoints.Client()); err != nil {
			return engine.Services{}, err
		}
	}
	return engine.Services{
		FanOut:     fo,
		Models:     clients,
		ModelTable: table,
		HTTP:       httpOpts,
		Toolsets: toolsets.Options{
			ClientName: o.Name, ClientVersion: o.Version,
			HTTPClient: endpoints.Client(), CheckEndpoint: endpoints.Check,
		},
	}, nil
}
