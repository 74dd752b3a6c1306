package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/internal/httpfield"
	"github.com/runnerd/lambda-runner/protocol"
)

// policyPath is where the policy sits in the execution request, for
// protocol.Detail paths.
const policyPath = "runtime.http.policy"

// policy is a validated protocol.HTTPPolicy.
type policy struct {
	allow   []string // host globs; empty means any host
	deny    []string // host globs
	methods []string // upper-case; empty means any method
}

// compilePolicy validates p. Every problem is a *protocol.Detail; several are
// joined with errors.Join.
func compilePolicy(p protocol.HTTPPolicy) (policy, error) {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &protocol.Detail{Path: policyPath + "." + path, Message: fmt.Sprintf(format, args...)})
	}
	var out policy
	hosts := func(field string, patterns []string) []string {
		if err := glob.CheckList(len(patterns)); err != nil {
			bad(field, "%v", err)
			return nil
		}
		var list []string
		for i, pat := range patterns {
			clean, err := hostPattern(pat)
			if err != nil {
				bad(fmt.Sprintf("%s[%d]", field, i), "%v", err)
				continue
			}
			list = append(list, clean)
		}
		return list
	}
	out.allow = hosts("allowHosts", p.AllowHosts)
	out.deny = hosts("denyHosts", p.DenyHosts)
	for i, m := range p.Methods {
		if !httpfield.ValidName(m) {
			bad(fmt.Sprintf("methods[%d]", i), "%q is not a valid HTTP method", m)
			continue
		}
		out.methods = append(out.methods, strings.ToUpper(m))
	}
	if p.MaxResponseBytes < 0 {
		bad("maxResponseBytes", "must not be negative")
	}
	if p.TimeoutMs < 0 {
		bad("timeoutMs", "must not be negative")
	}
	if p.MaxRequests < 0 {
		bad("maxRequests", "must not be negative")
	}
	if p.MaxRedirects != nil && *p.MaxRedirects < 0 {
		bad("maxRedirects", "must not be negative")
	}
	return out, errors.Join(errs...)
}

// hostPattern checks one allowHosts/denyHosts entry and returns it ready for
// glob.MatchHost. Beyond glob.Validate it refuses URLs and host:port, which
// would silently never match and so turn an allow list into "deny all" or,
// worse, a deny list into nothing.
func hostPattern(p string) (string, error) {
	if strings.Contains(p, ":") {
		// An IPv6 literal has colons, and no labels to check.
		if err := glob.Validate(p); err != nil {
			return "", err
		}
	} else if err := glob.ValidateHost(p); err != nil {
		return "", err
	}
	if strings.ContainsAny(p, "/@?#") {
		return "", fmt.Errorf("%q must be a host name pattern, without scheme, path or user", p)
	}
	if strings.Contains(p, ":") {
		// An IPv6 literal, bracketed or not, is a host; anything else with
		// a colon carries a port.
		if ip, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
			return ip.String(), nil
		}
		return "", fmt.Errorf("%q must be a host name pattern, without port", p)
	}
	return p, nil
}

// maxHostLen is the longest DNS name (RFC 1035), its trailing dot aside.
const maxHostLen = 253

// checkHost applies denyHosts then allowHosts to a lower-case host.
func (p *policy) checkHost(host string) error {
	if len(host) > maxHostLen {
		// No such name resolves, and every pattern would be matched
		// against it.
		return blocked("host of %d bytes, longer than a DNS name may be (%d)", len(host), maxHostLen)
	}
	for _, d := range p.deny {
		if glob.MatchHost(d, host) {
			return blocked("host %s is denied by denyHosts pattern %q", host, d)
		}
	}
	if len(p.allow) == 0 {
		return nil
	}
	for _, a := range p.allow {
		if glob.MatchHost(a, host) {
			return nil
		}
	}
	return blocked("host %s is not in allowHosts", host)
}

// checkMethod applies methods to an upper-case method.
func (p *policy) checkMethod(method, host string) error {
	if len(p.methods) == 0 || slices.Contains(p.methods, method) {
		return nil
	}
	return blocked("method %s to host %s is not in methods (%s)", method, host, strings.Join(p.methods, ", "))
}
