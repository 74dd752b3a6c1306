package permission

import (
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/protocol"
)

var fuzzActions = []string{model, tool, httpReq, workflow, "unknown.action"}

// lines splits a fuzz string into list entries; "" is an empty list.
func lines(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// FuzzDecide checks the properties every decision must have, whatever the
// request: no panic, well-formed decisions, and no later step (tool
// policies, grants, consent) ever turning a permissions deny into anything
// else.
//
// Inputs: permissions (one per line; absent unless present), tool policies
// ("decision match reason" per line), grants ("kind:glob" or "action
// resource" per line), consentAvailable, the action (index into
// fuzzActions) and the resource.
func FuzzDecide(f *testing.F) {
	f.Add(true, "tool:github/*\nhttp:*.example.com", "deny github/delete_* destructive\nconsent github/create_*", "tool:github/create_*", true, uint8(1), "github/create_issue")
	f.Add(true, "tool:github/*", "allow */*", "tool:*", false, uint8(1), "slack/post")
	f.Add(true, "", "allow */*", "tool:*", true, uint8(1), "github/list")
	f.Add(false, "", "consent pager/*", "", false, uint8(1), "pager/page")
	f.Add(false, "", "consent pager/*", "tool.call pager/*", false, uint8(1), "pager/page")
	f.Add(true, "http:*.example.com", "", "http:*", false, uint8(2), "Example.COM.:443")
	f.Add(true, "http:::1", "", "", false, uint8(2), "[::1]:80")
	f.Add(true, "model:gen*\nworkflow:review", "deny */*", "model:*", true, uint8(0), "general")
	f.Add(true, "workflow:review", "", "", false, uint8(3), "review")
	f.Add(false, "", "deny */*", "", false, uint8(4), "x/y")
	f.Fuzz(func(t *testing.T, present bool, perms, pols, grs string, consent bool, ai uint8, resource string) {
		action := fuzzActions[int(ai)%len(fuzzActions)]
		c := Config{ConsentAvailable: consent}
		if present {
			c.Permissions = lines(perms)
		}
		for _, l := range lines(pols) {
			f := strings.SplitN(l, " ", 3)
			p := protocol.ToolPolicy{Decision: f[0]}
			if len(f) > 1 {
				p.Match = f[1]
			}
			if len(f) > 2 {
				p.Reason = f[2]
			}
			c.ToolPolicies = append(c.ToolPolicies, p)
		}
		for _, l := range lines(grs) {
			if a, r, err := protocol.ParseCapability(l); err == nil {
				c.Grants = append(c.Grants, protocol.Grant{Action: a, Resource: r})
			} else {
				a, r, _ := strings.Cut(l, " ")
				c.Grants = append(c.Grants, protocol.Grant{Action: a, Resource: r})
			}
		}

		d, err := New(c)
		if err != nil {
			if _, ok := err.(interface{ Unwrap() []error }); !ok {
				t.Fatalf("New error %T is not a joined list", err)
			}
			return
		}
		got := d.Decide(action, resource)

		if n := NormalizeHost(resource); NormalizeHost(n) != n {
			t.Fatalf("NormalizeHost is not idempotent on %q: %q then %q", resource, n, NormalizeHost(n))
		}

		// Well-formed.
		switch got.Outcome {
		case Allow, Deny, Consent:
		default:
			t.Fatalf("outcome %q", got.Outcome)
		}
		switch got.Source {
		case SourcePermissions, SourceToolPolicy, SourceAuthorization, SourceDefault:
		default:
			t.Fatalf("source %q", got.Source)
		}
		if !strings.HasPrefix(got.Reason, string(got.Source)+": ") {
			t.Fatalf("reason %q does not name source %q", got.Reason, got.Source)
		}
		if got.Action != action {
			t.Fatalf("action %q, want %q", got.Action, action)
		}
		if again := d.Decide(action, got.Resource); again != got {
			t.Fatalf("deciding the decided resource again changed the decision:\n%+v\n%+v", got, again)
		}
		if got.Outcome == Consent && (action != tool || !consent || got.Source != SourceToolPolicy) {
			t.Fatalf("consent outside a tool policy with an interaction route: %+v", got)
		}
		if got.Source == SourceAuthorization && (got.Outcome != Allow || len(c.Grants) == 0) {
			t.Fatalf("authorization without a grant allowing: %+v", got)
		}

		// A permissions deny is final: nothing after step 1 can turn it.
		base, err := New(Config{Permissions: c.Permissions})
		if err != nil {
			t.Fatalf("permissions alone are invalid though the whole config is not: %v", err)
		}
		if b := base.Decide(action, resource); b.Outcome == Deny && b.Source == SourcePermissions && (got.Outcome != Deny || got.Source != SourcePermissions) {
			t.Fatalf("permissions deny %q turned into %+v", b.Reason, got)
		}
		// And independently of the decider: with permissions present, an
		// allow needs an entry of the action's kind that matches.
		if present && got.Outcome == Allow && !permitted(c.Permissions, action, got.Resource) {
			t.Fatalf("allowed %s %q with no matching entry in %q: %+v", action, got.Resource, c.Permissions, got)
		}

		// Grants never turn a deny into anything else.
		noGrants := c
		noGrants.Grants = nil
		ng, err := New(noGrants)
		if err != nil {
			t.Fatalf("config without grants is invalid: %v", err)
		}
		// The one deny a grant may lift is the consent nobody can give.
		if n := ng.Decide(action, resource); n.Outcome == Deny &&
			!strings.Contains(n.Reason, "consent required, no interaction route") && got != n {
			t.Fatalf("grant changed the deny %q into %+v", n.Reason, got)
		}
	})
}

func permitted(perms []string, action, resource string) bool {
	for _, p := range perms {
		a, pattern, err := protocol.ParseCapability(p)
		if err != nil || a != action {
			continue
		}
		if action == httpReq && glob.MatchHost(pattern, resource) || action != httpReq && glob.Match(pattern, resource) {
			return true
		}
	}
	return false
}
