package models

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/runnerd/lambda-runner/protocol"
)

// Which credentials a model call carries is decided here, and only here.
//
// The runner holds credentials of its own: the function's IAM role (what
// the AWS configuration loads), keys in its environment (OPENAI_API_KEY,
// ANTHROPIC_API_KEY, AWS_BEARER_TOKEN_BEDROCK, …) and the bearer tokens of
// its clients. None of them may go to an endpoint a request chose. The
// OpenAI and Anthropic providers never read the environment (openAI and
// anthropic build their SDK clients without its defaults): they send the
// entry's apiKey or nothing. Bedrock signs with the IAM role unless the
// entry has an apiKey, so a Bedrock entry that names a baseUrl must carry
// its apiKey, unless the operator listed that endpoint's origin in
// Clients.TrustedEndpoints (RUNNER_MODEL_ENDPOINTS: a VPC endpoint, say).
// A Bedrock entry without a baseUrl goes to AWS's own endpoint of its
// region (checkRegion keeps a region to the form of one, so it cannot
// name another host).

// useRoleCredentials reports whether calls for m are signed with the AWS
// configuration's credentials (the IAM role), and returns why m may not be
// called at all, when it may not: a Bedrock entry with a baseUrl outside
// the operator's trusted endpoints and no apiKey of its own.
func (c *Clients) useRoleCredentials(m protocol.Model) (bool, *protocol.Detail) {
	if m.Provider != ProviderBedrock || strings.TrimSpace(m.APIKey) != "" {
		return false, nil
	}
	if m.BaseURL == "" || c.trusted(m.BaseURL) {
		return true, nil
	}
	return false, &protocol.Detail{Path: "apiKey", Message: "is required for a bedrock entry with a baseUrl: " +
		"the runner's own AWS credentials go only to AWS's endpoints and to those the operator lists in RUNNER_MODEL_ENDPOINTS"}
}

// trusted reports whether rawURL's origin (scheme, host and port) is one
// of c.TrustedEndpoints. A URL with user information is never trusted:
// what it names as a host is not always where it goes.
func (c *Clients) trusted(rawURL string) bool {
	o, ok := endpointOrigin(rawURL)
	if !ok {
		return false
	}
	for _, t := range c.TrustedEndpoints {
		if to, ok := endpointOrigin(t); ok && to == o {
			return true
		}
	}
	return false
}

// endpointOrigin returns rawURL's scheme and host, lower-cased, with the
// scheme's default port made explicit, or false when rawURL is not an
// http or https URL naming a host without user information.
func endpointOrigin(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return "", false
	case port == "" && scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port, true
}

// CheckCredentials returns a *protocol.Detail, joined with [errors.Join],
// for every entry of ms that could not be called because it would need a
// credential of the runner's own at an endpoint it chose (a Bedrock entry
// with a baseUrl outside TrustedEndpoints and no apiKey). path prefixes the
// paths ("runtime.models" or "RUNNER_MODELS"); the messages quote no URL.
// It is the same rule Provider applies to every call.
func (c *Clients) CheckCredentials(path string, ms []protocol.Model) error {
	var errs []error
	for i, m := range ms {
		if _, d := c.useRoleCredentials(m); d != nil {
			errs = append(errs, &protocol.Detail{Path: fmt.Sprintf("%s[%d].%s", path, i, d.Path), Message: d.Message})
		}
	}
	return errors.Join(errs...)
}
