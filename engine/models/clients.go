package models

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/runnerd/lambda-runner/protocol"
)

// Clients builds providers from model entries. Make one per process and
// share it: it is safe for concurrent use, and loads the AWS configuration
// once. Its fields must not change after the first call to Provider.
//
// Retries: a reply with status 429 or 5xx, or a failure to connect, is
// retried through each SDK's own retry loop (exponential backoff with
// jitter, honouring retry-after-ms / Retry-After / x-amz-retry-after), up
// to MaxRetries times. A retry whose wait would end past the context's
// deadline is not made: the call fails at once with the provider's error.
// Any other error fails at once.
type Clients struct {
	// HTTPClient sends the OpenAI and Anthropic requests, and Bedrock's when
	// set; nil means http.DefaultClient for the former and the AWS
	// configuration's client for Bedrock.
	HTTPClient *http.Client
	// CheckEndpoint, when not nil, is asked about a model entry's baseUrl
	// before any call; an error fails the call at once with its message
	// (egress.Endpoints.Check says what was blocked and why).
	CheckEndpoint func(ctx context.Context, rawURL string) error
	// MaxRetries is the number of retries after the first attempt; zero
	// means DefaultMaxRetries and a negative value means none.
	MaxRetries int
	// LoadAWSConfig loads the AWS configuration Bedrock uses (region,
	// credentials: the function's IAM role). Nil means the SDK's default
	// chain (config.LoadDefaultConfig), except in an awsenv build, which
	// does not link that chain: there it must be set (the bootstrap sets
	// infra/awsconfig.Load). It is called at most once successfully.
	LoadAWSConfig func(ctx context.Context) (aws.Config, error)
	// TrustedEndpoints are the origins ("https://host[:port]") to which a
	// Bedrock entry's baseUrl may send the AWS configuration's own
	// credentials (RUNNER_MODEL_ENDPOINTS). A Bedrock entry whose baseUrl
	// is elsewhere must carry its apiKey (credentials.go).
	TrustedEndpoints []string

	awsMu  sync.Mutex
	awsCfg *aws.Config

	clientOnce sync.Once
	client     *http.Client // httpClient's
}

// Provider returns the provider for model entry m. It is cheap: the engine
// may call it for every model call.
func (c *Clients) Provider(ctx context.Context, m protocol.Model) (Provider, error) {
	if c.CheckEndpoint != nil && m.BaseURL != "" {
		if err := c.CheckEndpoint(ctx, m.BaseURL); err != nil {
			return nil, &Error{Provider: m.Provider, Message: newScrubber(m).scrub(err.Error())}
		}
	}
	if b := builders[m.Provider]; b != nil {
		return b(ctx, c, m)
	}
	msg := checkProvider(m.Provider)
	if m.Provider == "" {
		msg = "provider " + msg
	}
	return nil, fmt.Errorf("models: %s", msg)
}

// retries is the number of retries after the first attempt.
func (c *Clients) retries() int {
	switch {
	case c.MaxRetries == 0:
		return DefaultMaxRetries
	case c.MaxRetries < 0:
		return 0
	}
	return c.MaxRetries
}

// orStatusText returns msg, or the status's text when msg is blank.
func orStatusText(msg string, status int) string {
	if strings.TrimSpace(msg) == "" {
		return http.StatusText(status)
	}
	return msg
}

// httpClient is the client of every provider's SDK: HTTPClient (or
// http.DefaultClient) that follows no redirect. A model API has no reason
// to redirect, and a call carries its credential (the entry's key, or the
// role's signature and session token at a trusted endpoint) to whatever
// host a redirect names: the call fails with errRedirect, a MODEL_ERROR.
func (c *Clients) httpClient() *http.Client {
	c.clientOnce.Do(func() {
		base := c.HTTPClient
		if base == nil {
			base = http.DefaultClient
		}
		hc := *base
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
		c.client = &hc
	})
	return c.client
}

// errRedirect is what a model call that was redirected fails with.
var errRedirect = errors.New("the model endpoint answered with a redirect, which model calls never follow")
