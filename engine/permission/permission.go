// Package permission is the one permission decider of the runner: every side
// effect an execution can have (a model invocation, a tool call, an HTTP
// request, a child workflow run) is an action on a resource, and the engine
// asks a [Decider] about it before the effect runs, then reports the
// [Decision] as a permission.decision event.
//
// Actions and their resources:
//
//	model.invoke   model role            "general"
//	tool.call      "toolset/tool"        "github/create_issue"
//	http.request   host name             "api.example.com" (see NormalizeHost)
//	workflow.run   child workflow id     "review"
//
// A request carries up to four inputs to the decision: permissions[] (the
// workflow's capabilities), toolPolicies[] (the host's tool policies),
// authorization.grants[] (consents already given) and consentAvailable
// (whether the launch has a route to ask a person). Decide applies them in
// this order; the first step that settles the action ends the decision:
//
//  1. permissions[]: strings "kind:glob" whose kind is model, tool, http or
//     workflow (model.invoke, tool.call, http.request, workflow.run). When
//     the field is present (non-nil, even empty) and no entry of the action's
//     kind matches the resource, the action is denied with source
//     "permissions". When the field is absent (nil) this step restricts
//     nothing. http entries match with host glob semantics
//     ([glob.MatchHost]), every other kind with resource glob semantics
//     ([glob.Match]).
//  2. toolPolicies[] (tool.call only; ignored for every other action): of the
//     policies whose match glob matches "toolset/tool", deny beats consent
//     beats allow. deny: the action is denied, source "toolPolicy", and the
//     reason carries the policy's own reason when it has one. allow: the
//     action is allowed, source "toolPolicy". consent: step 3.
//  3. Consent needed: a grant in authorization.grants[] with the same action
//     whose resource glob matches allows the action, source
//     "authorization". Otherwise, with consentAvailable the outcome is
//     "consent" (the node suspends), source "toolPolicy"; without it the
//     action is denied, source "toolPolicy", reason "consent required, no
//     interaction route".
//  4. Otherwise the action is allowed, source "permissions" when step 1
//     matched an entry, else "default".
//
// Grants only ever satisfy a consent: a grant never overrides a deny (from
// permissions[] or from a deny policy), and a grant for an action that needs
// no consent changes nothing. Since only tool policies ask for consent, only
// tool.call grants have an effect today.
//
// When several rules of the same kind match, the first one in request order
// is the one named in the reason.
//
// An unknown action is denied (source "default"): the decider fails closed
// rather than letting an action it does not understand through.
//
// Every side effect passes this decider, and nothing else decides: the engine
// decides statically named actions (tool nodes, literal model roles, literal
// URL hosts, child workflow ids) right after the accepted event, before any
// node runs, so that a denial or a suspension is known before the first side
// effect; it decides the rest (templated URLs, redirects, agent tool calls)
// when they happen. Because Decide is pure, both give the same answer.
//
// [New] validates the fields before acceptance and reports every problem as
// a [*protocol.Detail] whose path is the request's own. docs/permissions.md is the
// operator's version of this comment, with example events.
package permission

import (
	"fmt"
	"strings"

	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/protocol"
)

// Outcome is what a Decision says about an action. Its values are the
// "decision" field of the permission.decision event.
type Outcome string

// Outcomes.
const (
	// Allow lets the action run.
	Allow Outcome = "allow"
	// Deny fails the node with PERMISSION_DENIED.
	Deny Outcome = "deny"
	// Consent suspends the node until the server relaunches with a grant.
	Consent Outcome = "consent"
)

// Source names the input that settled a Decision. Its values are the
// "source" field of the permission.decision event.
type Source string

// Sources.
const (
	// SourcePermissions is the workflow's permissions[] field.
	SourcePermissions Source = "permissions"
	// SourceToolPolicy is the host's toolPolicies[] field.
	SourceToolPolicy Source = "toolPolicy"
	// SourceAuthorization is a launch grant in authorization.grants[].
	SourceAuthorization Source = "authorization"
	// SourceDefault means no rule applied.
	SourceDefault Source = "default"
)

// Decision is the verdict on one action. The JSON field names are those of
// the permission.decision event, which adds nodeId and the event envelope.
type Decision struct {
	Action   string  `json:"action"`
	Resource string  `json:"resource"` // as decided: http hosts normalized
	Outcome  Outcome `json:"decision"`
	Source   Source  `json:"source"`
	// Reason is for people (audit logs, error messages): it names the rule
	// that decided, e.g. `permissions: no entry matches tool:github/delete_repo`.
	Reason string `json:"reason"`
}

// Allowed reports whether the action may run now.
func (d Decision) Allowed() bool { return d.Outcome == Allow }

// Config is the part of an execution request that decides permissions.
type Config struct {
	// Permissions is the request's permissions[]. nil means the field is
	// absent (no restriction); a non-nil empty slice denies every action.
	Permissions []string
	// ToolPolicies is the request's toolPolicies[].
	ToolPolicies []protocol.ToolPolicy
	// Grants is the request's authorization.grants[].
	Grants []protocol.Grant
	// ConsentAvailable is the request's consentAvailable: whether a person
	// can be asked, so that a consent suspends rather than denies.
	ConsentAvailable bool
}

// Decider decides actions for one execution. It is immutable once built by
// New, so Decide is safe for concurrent use.
type Decider struct {
	restricted  bool // permissions[] present
	permissions []rule
	policies    []policy
	grants      []rule
	consent     bool
}

// rule is a parsed permissions[] entry or grant.
type rule struct {
	index    int    // position in the request, for reasons
	action   string // protocol.Action*
	pattern  string // resource or host glob
	original string // as written, for reasons
}

// policy is a validated tool policy.
type policy struct {
	index    int
	match    string
	decision Outcome
	reason   string
}

// MaxResource is the longest resource (a tool, a model role, a workflow id,
// a host) Decide matches; a longer one is denied.
const MaxResource = 4 << 10

// Decide decides whether action may run on resource. For http.request the
// resource is a host; it is normalized with NormalizeHost (the caller should
// already have done so; doing it again is harmless) and the Decision carries
// the normalized host.
func (d *Decider) Decide(action, resource string) Decision {
	if action == protocol.ActionHTTPRequest {
		resource = NormalizeHost(resource)
	}
	if _, known := kinds[action]; !known {
		return Decision{Action: action, Resource: resource}.with(Deny, SourceDefault, fmt.Sprintf("default: unknown action %q", action))
	}
	if len(resource) > MaxResource {
		// Every pattern of every list is matched against it, for every
		// action on it: refused, not matched, and not quoted.
		return Decision{Action: action, Resource: strings.ToValidUTF8(resource[:64], "") + "…"}.with(Deny, SourceDefault,
			fmt.Sprintf("default: a %s resource of %d bytes, more than the %d any may have", kinds[action], len(resource), MaxResource))
	}
	dec := Decision{Action: action, Resource: resource}
	subject := describe(action, resource)
	if why := patternLike(action, resource); why != "" {
		// A consent for it would be granted as the pattern it spells, for
		// more than was shown; and a policy for the toolset's tools would
		// not match it.
		return dec.with(Deny, SourceDefault, fmt.Sprintf("default: %s %s", subject, why))
	}

	// Step 1: the workflow's capabilities.
	var granted *rule
	if d.restricted {
		granted = d.firstMatch(d.permissions, action, resource)
		if granted == nil {
			return dec.with(Deny, SourcePermissions, "permissions: no entry matches "+subject)
		}
	}

	// Step 2: host tool policies, strongest decision first.
	if action == protocol.ActionToolCall {
		if p := d.strongestPolicy(resource); p != nil {
			named := fmt.Sprintf("toolPolicies[%d] %q", p.index, p.match)
			own := ""
			if p.reason != "" {
				own = ": " + p.reason
			}
			switch p.decision {
			case Deny:
				return dec.with(Deny, SourceToolPolicy, fmt.Sprintf("toolPolicy: %s denies %s%s", named, subject, own))
			case Allow:
				return dec.with(Allow, SourceToolPolicy, fmt.Sprintf("toolPolicy: %s allows %s%s", named, subject, own))
			}

			// Step 3: consent.
			needs := fmt.Sprintf("%s requires consent for %s%s", named, subject, own)
			if g := d.firstMatch(d.grants, action, resource); g != nil {
				return dec.with(Allow, SourceAuthorization,
					fmt.Sprintf("authorization: authorization.grants[%d] %q gives the consent %s requires for %s",
						g.index, g.original, named, subject))
			}
			if d.consent {
				return dec.with(Consent, SourceToolPolicy, "toolPolicy: "+needs)
			}
			return dec.with(Deny, SourceToolPolicy, "toolPolicy: consent required, no interaction route: "+needs)
		}
	}

	// Step 4: nothing objected.
	if granted != nil {
		return dec.with(Allow, SourcePermissions,
			fmt.Sprintf("permissions: permissions[%d] %q allows %s", granted.index, granted.original, subject))
	}
	return dec.with(Allow, SourceDefault, "default: no permission rule or tool policy restricts "+subject)
}

func (d Decision) with(o Outcome, s Source, reason string) Decision {
	d.Outcome, d.Source, d.Reason = o, s, reason
	return d
}

// firstMatch returns the first rule for action whose pattern matches
// resource, or nil.
func (d *Decider) firstMatch(rules []rule, action, resource string) *rule {
	for i := range rules {
		r := &rules[i]
		if r.action == action && matches(action, r.pattern, resource) {
			return r
		}
	}
	return nil
}

// strongestPolicy returns the first matching policy of the strongest
// decision (deny, then consent, then allow), or nil when none matches.
func (d *Decider) strongestPolicy(tool string) *policy {
	var best *policy
	for i := range d.policies {
		p := &d.policies[i]
		if !glob.Match(p.match, tool) {
			continue
		}
		if best == nil || strength[p.decision] > strength[best.decision] {
			best = p
		}
	}
	return best
}

// strength orders tool policy decisions: a stricter policy wins whatever the
// order the host wrote them in.
var strength = map[Outcome]int{Allow: 1, Consent: 2, Deny: 3}

// matches applies the glob semantics of the action's resource: hosts are
// case-insensitive and label-based, everything else is case-sensitive and
// segment-based.
func matches(action, pattern, resource string) bool {
	if action == protocol.ActionHTTPRequest {
		return glob.MatchHost(pattern, resource)
	}
	return glob.Match(pattern, resource)
}

// kinds maps actions back to the short kinds of permissions[], so that
// reasons name resources the way operators write them ("tool:github/x").
var kinds = map[string]string{
	protocol.ActionModelInvoke: "model",
	protocol.ActionToolCall:    "tool",
	protocol.ActionHTTPRequest: "http",
	protocol.ActionWorkflowRun: "workflow",
}

// patternLike says why resource cannot be decided on, "" when it can: a
// '*' makes it a pattern (a grant of it would widen to every resource it
// matches), and a tool named with a '/' is a segment more than the policies
// for its toolset's tools ("toolset/*") match.
func patternLike(action, resource string) string {
	if strings.Contains(resource, "*") {
		return "contains '*', which grants, policies and permissions read as a wildcard"
	}
	if action == protocol.ActionToolCall {
		if _, tool, ok := strings.Cut(resource, "/"); ok && strings.Contains(tool, "/") {
			return "names a tool containing '/', which policies for the toolset's tools would not match"
		}
	}
	return ""
}

func describe(action, resource string) string {
	if kind, ok := kinds[action]; ok {
		return kind + ":" + resource
	}
	return action + " " + resource
}

// NormalizeHost turns the host part of a URL ("API.Example.com:8443",
// "[::1]:80", "example.com.") into the resource of an http.request action:
// lower-case, without port, IPv6 brackets or trailing dots. It is idempotent,
// so normalizing twice is harmless.
func NormalizeHost(hostport string) string {
	h := hostport
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			h = h[1:end] // "[v6]:port"
		}
	}
	// Exactly one colon is "host:port"; two or more is a bare IPv6 address,
	// which has no port to strip.
	if strings.Count(h, ":") == 1 {
		h, _, _ = strings.Cut(h, ":")
	}
	return strings.TrimRight(strings.ToLower(h), ".")
}
