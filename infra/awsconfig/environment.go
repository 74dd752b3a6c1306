package awsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
)

// FromEnvironment builds the AWS configuration from the variables Lambda
// sets and the ones an operator may add, read as the SDK's default chain
// reads them:
//
//   - AWS_REGION, else AWS_DEFAULT_REGION;
//   - AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or
//     else the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_*,
//     AWS_CONTAINER_AUTHORIZATION_TOKEN*);
//   - AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> (AWS_ENDPOINT_URL_SECRETS_MANAGER,
//     AWS_ENDPOINT_URL_BEDROCK_RUNTIME), unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true;
//   - AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT;
//   - AWS_MAX_ATTEMPTS and AWS_RETRY_MODE;
//   - AWS_CA_BUNDLE.
//
// Credentials from anywhere else (profiles, SSO, web identity, instance
// roles) need the default chain: a variable that asks for one
// without access keys in the environment is an error naming it.
func FromEnvironment(lookup func(string) (string, bool)) (aws.Config, error) {
	get := func(name string) string { v, _ := lookup(name); return v }
	env := envSource{get: get}
	cfg := aws.Config{Region: get("AWS_REGION"), ConfigSources: []any{env}}
	if cfg.Region == "" {
		cfg.Region = get("AWS_DEFAULT_REGION")
	}

	id, secret := get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")
	switch {
	case id != "" && secret != "":
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, secret, get("AWS_SESSION_TOKEN"))
	case id != "":
		return aws.Config{}, fmt.Errorf("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY")
	case secret != "":
		return aws.Config{}, fmt.Errorf("AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID")
	case get("AWS_CONTAINER_CREDENTIALS_FULL_URI") != "" || get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") != "":
		provider, err := containerCredentials(get)
		if err != nil {
			return aws.Config{}, err
		}
		cfg.Credentials = provider
	default:
		for _, name := range otherCredentials {
			if get(name) != "" {
				return aws.Config{}, fmt.Errorf("%s is set, but this build reads AWS credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a container credentials endpoint only, as Lambda provides them: build with AWSCONFIG=full for the SDK's default chain (docs/deploy.md)", name)
			}
		}
		return aws.Config{}, fmt.Errorf("no AWS credentials: neither AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set (Lambda sets them; this build reads no profile or instance role: build with AWSCONFIG=full for the SDK's default chain, docs/deploy.md)")
	}

	if !env.ignoreEndpoints() {
		if u := get("AWS_ENDPOINT_URL"); u != "" {
			cfg.BaseEndpoint = aws.String(u)
		}
	}
	if v := get("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return aws.Config{}, fmt.Errorf("AWS_MAX_ATTEMPTS: want a whole number of at least 1, got %q", v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v := get("AWS_RETRY_MODE"); v != "" {
		mode, err := aws.ParseRetryMode(v)
		if err != nil {
			return aws.Config{}, fmt.Errorf("AWS_RETRY_MODE: %w", err)
		}
		cfg.RetryMode = mode
	}
	for _, name := range []string{"AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		if _, _, err := env.flag(name); err != nil {
			return aws.Config{}, err
		}
	}
	if path := get("AWS_CA_BUNDLE"); path != "" {
		client, err := caBundleClient(path)
		if err != nil {
			return aws.Config{}, err
		}
		cfg.HTTPClient = client
	}
	return cfg, nil
}

// otherCredentials are the variables that point the default chain at
// credentials this build does not read.
var otherCredentials = []string{"AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"}

// containerCredentials is the SDK's container credentials provider
// (endpointcreds), set up as the default chain sets it up: the endpoint is
// AWS_CONTAINER_CREDENTIALS_FULL_URI, else the ECS agent's address with
// AWS_CONTAINER_CREDENTIALS_RELATIVE_URI; a plain-HTTP full URI must name
// a loopback or the ECS or EKS agent's address; the request carries
// AWS_CONTAINER_AUTHORIZATION_TOKEN, or the token the file
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE holds when it is read; the
// credentials are cached and renewed five minutes before they expire.
func containerCredentials(get func(string) string) (aws.CredentialsProvider, error) {
	endpoint := get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	if endpoint == "" {
		endpoint = "http://169.254.170.2" + get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
	} else {
		u, err := url.Parse(endpoint)
		if err != nil || u.Hostname() == "" || u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI: want an http or https URL")
		}
		if u.Scheme == "http" && !containerHost(u.Hostname()) {
			return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI: a plain-HTTP endpoint must be a loopback address or the ECS or EKS credentials agent, not %q", u.Hostname())
		}
	}
	token, tokenFile := get("AWS_CONTAINER_AUTHORIZATION_TOKEN"), get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
	provider := endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		o.AuthorizationToken = token
		if tokenFile != "" {
			o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return "", fmt.Errorf("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: %w", err)
				}
				return string(b), nil
			})
		}
	})
	return aws.NewCredentialsCache(provider, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute }), nil
}

// containerHost reports whether host may serve container credentials over
// plain HTTP: a loopback, the ECS agent (169.254.170.2) or the EKS Pod
// Identity agent (169.254.170.23, fd00:ec2::23).
func containerHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return ip.IsLoopback() || ip == netip.MustParseAddr("169.254.170.2") ||
		ip == netip.MustParseAddr("169.254.170.23") || ip == netip.MustParseAddr("fd00:ec2::23")
}

// caBundleClient is the SDK's HTTP client trusting the certificates of the
// PEM file at path, and only them, as the default chain does.
func caBundleClient(path string) (*awshttp.BuildableClient, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %s holds no PEM certificate", path)
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = pool
	}), nil
}

// envSource answers the SDK clients' questions about endpoints from the
// environment: each client looks for these methods among
// aws.Config.ConfigSources, as it does on the default chain's sources.
type envSource struct{ get func(string) string }

// GetServiceBaseEndpoint returns AWS_ENDPOINT_URL_<SERVICE>, the service's
// SDK ID in capitals with spaces as underscores.
func (e envSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if e.ignoreEndpoints() {
		return "", false, nil
	}
	v := e.get("AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return v, v != "", nil
}

// GetUseFIPSEndpoint reads AWS_USE_FIPS_ENDPOINT.
func (e envSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	return endpointState(e, "AWS_USE_FIPS_ENDPOINT", aws.FIPSEndpointStateUnset, aws.FIPSEndpointStateEnabled, aws.FIPSEndpointStateDisabled)
}

// GetUseDualStackEndpoint reads AWS_USE_DUALSTACK_ENDPOINT.
func (e envSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	return endpointState(e, "AWS_USE_DUALSTACK_ENDPOINT", aws.DualStackEndpointStateUnset, aws.DualStackEndpointStateEnabled, aws.DualStackEndpointStateDisabled)
}

// endpointState reads the flag name as one of the SDK's endpoint states.
func endpointState[S any](e envSource, name string, unset, enabled, disabled S) (S, bool, error) {
	on, found, err := e.flag(name)
	switch {
	case !found || err != nil:
		return unset, false, err
	case on:
		return enabled, true, nil
	}
	return disabled, true, nil
}

func (e envSource) ignoreEndpoints() bool {
	on, _, _ := e.flag("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	return on
}

// flag reads a true/false variable as the default chain does (any case).
func (e envSource) flag(name string) (on, found bool, err error) {
	switch v := e.get(name); strings.ToLower(v) {
	case "":
		return false, false, nil
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	default:
		return false, false, fmt.Errorf("%s: want true or false, got %q", name, v)
	}
}
