package permission

import (
	"errors"
	"fmt"
	"strings"

	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/protocol"
)

// New validates c and builds its Decider. Validation is complete rather than
// fail-fast: the error joins (errors.Join) one *protocol.Detail per problem, in
// request order, so a caller can list them all through
// Unwrap() []error. A request whose permission fields are invalid must be
// refused before acceptance, never run with part of its rules ignored.
//
// New copies what it keeps: changing c afterwards does not change the
// Decider.
func New(c Config) (*Decider, error) {
	var errs []error
	fail := func(path, format string, args ...any) {
		errs = append(errs, &protocol.Detail{Path: path, Message: fmt.Sprintf(format, args...)})
	}

	d := &Decider{restricted: c.Permissions != nil, consent: c.ConsentAvailable}
	for _, l := range []struct {
		path string
		n    int
	}{{"permissions", len(c.Permissions)}, {"toolPolicies", len(c.ToolPolicies)}, {"authorization.grants", len(c.Grants)}} {
		if err := glob.CheckList(l.n); err != nil {
			fail(l.path, "%v", err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	for i, s := range c.Permissions {
		path := fmt.Sprintf("permissions[%d]", i)
		action, pattern, err := protocol.ParseCapability(s)
		if err != nil {
			fail(path, "%v", err)
			continue
		}
		if msg := checkPattern(action, pattern); msg != "" {
			fail(path, "%q: %s", s, msg)
			continue
		}
		d.permissions = append(d.permissions, rule{index: i, action: action, pattern: pattern, original: s})
	}

	for i, p := range c.ToolPolicies {
		path := fmt.Sprintf("toolPolicies[%d]", i)
		ok := true
		if msg := checkToolMatch(p.Match); msg != "" {
			fail(path+".match", "%s", msg)
			ok = false
		}
		switch Outcome(p.Decision) {
		case Allow, Deny, Consent:
		default:
			fail(path+".decision", "%q is not a decision (want allow, deny or consent)", p.Decision)
			ok = false
		}
		if ok {
			d.policies = append(d.policies, policy{index: i, match: p.Match, decision: Outcome(p.Decision), reason: p.Reason})
		}
	}

	for i, g := range c.Grants {
		path := fmt.Sprintf("authorization.grants[%d]", i)
		if _, known := kinds[g.Action]; !known {
			fail(path+".action", "unknown action %q (want %s, %s, %s or %s)", g.Action,
				protocol.ActionModelInvoke, protocol.ActionToolCall, protocol.ActionHTTPRequest, protocol.ActionWorkflowRun)
			// The resource is still checked: report every problem at once.
			if err := glob.Validate(g.Resource); err != nil {
				fail(path+".resource", "%v", err)
			}
			continue
		}
		if msg := checkPattern(g.Action, g.Resource); msg != "" {
			fail(path+".resource", "%q: %s", g.Resource, msg)
			continue
		}
		d.grants = append(d.grants, rule{index: i, action: g.Action, pattern: g.Resource,
			original: kinds[g.Action] + ":" + g.Resource})
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return d, nil
}

// checkPattern validates the resource glob of a permission or grant for
// action. Beyond glob.Validate it refuses patterns that look right but can
// never match the resources the engine produces, because such a rule would
// silently deny (or never grant) instead of doing what its author meant.
func checkPattern(action, pattern string) string {
	if err := glob.Validate(pattern); err != nil {
		return err.Error()
	}
	switch action {
	case protocol.ActionToolCall:
		if pattern != "*" && !isToolGlob(pattern) {
			return `a tool pattern is "*" or "toolset/tool" (e.g. "github/*")`
		}
	case protocol.ActionHTTPRequest:
		// Resources are bare host names: no scheme, path or port. An IPv6
		// literal has several colons, a "host:port" exactly one.
		if strings.ContainsAny(pattern, "/[]") || strings.Count(pattern, ":") == 1 {
			return `an http pattern is a host name without scheme, port or path (e.g. "api.example.com", "*.example.com")`
		}
		if !strings.Contains(pattern, ":") {
			if err := glob.ValidateHost(pattern); err != nil {
				return err.Error()
			}
		}
	}
	return ""
}

// checkToolMatch validates the match glob of a tool policy.
func checkToolMatch(match string) string {
	if err := glob.Validate(match); err != nil {
		return err.Error()
	}
	if !isToolGlob(match) {
		return fmt.Sprintf(`%q is not of the form "toolset/glob" (e.g. "github/*", "*/*")`, match)
	}
	return ""
}

// isToolGlob reports whether pattern has the shape "toolset/tool": exactly
// one '/', with something on both sides.
func isToolGlob(pattern string) bool {
	toolset, tool, ok := strings.Cut(pattern, "/")
	return ok && toolset != "" && tool != "" && !strings.Contains(tool, "/")
}
