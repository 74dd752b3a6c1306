package permission

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

const (
	model    = protocol.ActionModelInvoke
	tool     = protocol.ActionToolCall
	httpReq  = protocol.ActionHTTPRequest
	workflow = protocol.ActionWorkflowRun
)

// grants decodes authorization.grants[] from JSON, so that the tests cover
// both wire forms (object and "kind:glob").
func grants(t testing.TB, js string) []protocol.Grant {
	t.Helper()
	var g []protocol.Grant
	if err := json.Unmarshal([]byte(js), &g); err != nil {
		t.Fatalf("grants %s: %v", js, err)
	}
	return g
}

func policies(ps ...string) []protocol.ToolPolicy {
	// "decision match [reason...]"
	var out []protocol.ToolPolicy
	for _, p := range ps {
		f := strings.SplitN(p, " ", 3)
		tp := protocol.ToolPolicy{Decision: f[0], Match: f[1]}
		if len(f) == 3 {
			tp.Reason = f[2]
		}
		out = append(out, tp)
	}
	return out
}

func TestDecide(t *testing.T) {
	// Tool policies shared by the precedence cases; the order they are
	// written in must not matter.
	mixed := policies("allow github/*", "consent github/create_* writes to GitHub", "deny github/delete_* destructive")
	mixedReversed := policies("deny github/delete_* destructive", "consent github/create_* writes to GitHub", "allow github/*")
	pager := policies("consent pager/* pages a human")

	tests := []struct {
		name     string
		config   Config
		action   string
		resource string

		want         Outcome
		source       Source
		wantResource string   // "" means resource unchanged
		reason       []string // substrings of Reason
	}{
		// Step 1: permissions[].
		{name: "absent permissions restrict nothing", config: Config{},
			action: model, resource: "general", want: Allow, source: SourceDefault, reason: []string{"default:"}},
		{name: "empty permissions deny models", config: Config{Permissions: []string{}},
			action: model, resource: "general", want: Deny, source: SourcePermissions,
			reason: []string{"permissions: no entry matches model:general"}},
		{name: "empty permissions deny tools", config: Config{Permissions: []string{}},
			action: tool, resource: "github/list", want: Deny, source: SourcePermissions},
		{name: "empty permissions beat a tool policy allow", config: Config{Permissions: []string{}, ToolPolicies: policies("allow */*")},
			action: tool, resource: "github/list", want: Deny, source: SourcePermissions},
		{name: "model wildcard", config: Config{Permissions: []string{"model:*"}},
			action: model, resource: "general", want: Allow, source: SourcePermissions,
			reason: []string{`permissions[0] "model:*" allows model:general`}},
		{name: "model role not listed", config: Config{Permissions: []string{"model:general"}},
			action: model, resource: "classifier", want: Deny, source: SourcePermissions},
		{name: "model roles are case-sensitive", config: Config{Permissions: []string{"model:gen*"}},
			action: model, resource: "General", want: Deny, source: SourcePermissions},
		{name: "second entry names the rule", config: Config{Permissions: []string{"model:general", "tool:github/*"}},
			action: tool, resource: "github/create_issue", want: Allow, source: SourcePermissions,
			reason: []string{`permissions[1] "tool:github/*"`}},
		{name: "tool permission does not allow http", config: Config{Permissions: []string{"tool:github/*"}},
			action: httpReq, resource: "github", want: Deny, source: SourcePermissions,
			reason: []string{"no entry matches http:github"}},
		{name: "tool permission does not allow a model named like it", config: Config{Permissions: []string{"tool:*"}},
			action: model, resource: "general", want: Deny, source: SourcePermissions},
		{name: "other toolset", config: Config{Permissions: []string{"tool:github/*"}},
			action: tool, resource: "gitlab/create_issue", want: Deny, source: SourcePermissions,
			reason: []string{"permissions: no entry matches tool:gitlab/create_issue"}},
		{name: "tool star stays in its segment", config: Config{Permissions: []string{"tool:github/*"}},
			action: tool, resource: "github/a/b", want: Deny, source: SourceDefault,
			reason: []string{"names a tool containing '/'"}},
		// A resource that is itself a pattern is denied, never suspended
		// for consent: a grant of what was shown would widen to every
		// resource it matches.
		{name: "a tool named * is denied, not asked for", config: Config{ToolPolicies: policies("consent demo/* ask"), ConsentAvailable: true},
			action: tool, resource: "demo/*", want: Deny, source: SourceDefault,
			reason: []string{"tool:demo/* contains '*', which grants, policies and permissions read as a wildcard"}},
		{name: "a tool name holding * is denied", config: Config{ToolPolicies: policies("allow demo/*")},
			action: tool, resource: "demo/ec*", want: Deny, source: SourceDefault, reason: []string{"contains '*'"}},
		{name: "a tool name holding / escapes no consent", config: Config{ToolPolicies: policies("consent demo/* ask"), ConsentAvailable: true},
			action: tool, resource: "demo/fs/delete", want: Deny, source: SourceDefault, reason: []string{"containing '/'"}},
		{name: "a role holding * is denied", action: model, resource: "gen*", want: Deny, source: SourceDefault, reason: []string{"contains '*'"}},
		{name: "a workflow id holding * is denied", action: workflow, resource: "*", want: Deny, source: SourceDefault, reason: []string{"contains '*'"}},
		{name: "host case and port", config: Config{Permissions: []string{"http:api.example.com"}},
			action: httpReq, resource: "API.Example.COM:8443", want: Allow, source: SourcePermissions,
			wantResource: "api.example.com", reason: []string{"allows http:api.example.com"}},
		{name: "host trailing dot", config: Config{Permissions: []string{"http:api.example.com"}},
			action: httpReq, resource: "api.example.com.", want: Allow, source: SourcePermissions, wantResource: "api.example.com"},
		{name: "host pattern case", config: Config{Permissions: []string{"http:API.Example.com"}},
			action: httpReq, resource: "api.example.com", want: Allow, source: SourcePermissions},
		{name: "subdomain wildcard excludes apex", config: Config{Permissions: []string{"http:*.example.com"}},
			action: httpReq, resource: "example.com", want: Deny, source: SourcePermissions},
		{name: "subdomain wildcard matches deep subdomain", config: Config{Permissions: []string{"http:*.example.com"}},
			action: httpReq, resource: "a.b.example.com:443", want: Allow, source: SourcePermissions, wantResource: "a.b.example.com"},
		{name: "subdomain wildcard is label-bound", config: Config{Permissions: []string{"http:*.example.com"}},
			action: httpReq, resource: "evilexample.com", want: Deny, source: SourcePermissions},
		{name: "apex and subdomains together", config: Config{Permissions: []string{"http:*.example.com", "http:example.com"}},
			action: httpReq, resource: "Example.com", want: Allow, source: SourcePermissions, wantResource: "example.com",
			reason: []string{`permissions[1] "http:example.com"`}},
		{name: "IPv6 literal", config: Config{Permissions: []string{"http:::1"}},
			action: httpReq, resource: "[::1]:8080", want: Allow, source: SourcePermissions, wantResource: "::1"},
		{name: "host normalized without permissions", config: Config{},
			action: httpReq, resource: "Example.COM:80", want: Allow, source: SourceDefault, wantResource: "example.com"},
		{name: "workflow listed", config: Config{Permissions: []string{"workflow:review"}},
			action: workflow, resource: "review", want: Allow, source: SourcePermissions},
		{name: "workflow not listed", config: Config{Permissions: []string{"workflow:review"}},
			action: workflow, resource: "review-2", want: Deny, source: SourcePermissions},
		{name: "model permission does not allow workflows", config: Config{Permissions: []string{"model:*"}},
			action: workflow, resource: "review", want: Deny, source: SourcePermissions},

		// Step 2: toolPolicies[].
		{name: "deny policy with reason", config: Config{ToolPolicies: policies("deny github/delete_* destructive")},
			action: tool, resource: "github/delete_repo", want: Deny, source: SourceToolPolicy,
			reason: []string{`toolPolicies[0] "github/delete_*" denies tool:github/delete_repo`, "destructive"}},
		{name: "allow policy", config: Config{ToolPolicies: policies("allow github/*")},
			action: tool, resource: "github/list", want: Allow, source: SourceToolPolicy,
			reason: []string{`toolPolicy: toolPolicies[0] "github/*" allows tool:github/list`}},
		{name: "only allow matches", config: Config{ToolPolicies: mixed},
			action: tool, resource: "github/list", want: Allow, source: SourceToolPolicy, reason: []string{"toolPolicies[0]"}},
		{name: "consent beats allow", config: Config{ToolPolicies: mixed, ConsentAvailable: true},
			action: tool, resource: "github/create_issue", want: Consent, source: SourceToolPolicy,
			reason: []string{`toolPolicies[1] "github/create_*" requires consent for tool:github/create_issue`, "writes to GitHub"}},
		{name: "deny beats allow", config: Config{ToolPolicies: mixed},
			action: tool, resource: "github/delete_repo", want: Deny, source: SourceToolPolicy, reason: []string{"toolPolicies[2]", "destructive"}},
		{name: "consent beats allow whatever the order", config: Config{ToolPolicies: mixedReversed, ConsentAvailable: true},
			action: tool, resource: "github/create_issue", want: Consent, source: SourceToolPolicy, reason: []string{"toolPolicies[1]"}},
		{name: "deny beats allow whatever the order", config: Config{ToolPolicies: mixedReversed},
			action: tool, resource: "github/delete_repo", want: Deny, source: SourceToolPolicy, reason: []string{"toolPolicies[0]"}},
		{name: "deny beats consent", config: Config{ToolPolicies: policies("consent */* ask first", "deny */drop_*"), ConsentAvailable: true},
			action: tool, resource: "db/drop_table", want: Deny, source: SourceToolPolicy, reason: []string{`toolPolicies[1] "*/drop_*"`}},
		{name: "first of equal policies names the rule", config: Config{ToolPolicies: policies("deny db/* first", "deny */drop_* second")},
			action: tool, resource: "db/drop_table", want: Deny, source: SourceToolPolicy, reason: []string{"toolPolicies[0]", "first"}},
		{name: "no policy matches", config: Config{ToolPolicies: policies("deny github/delete_*")},
			action: tool, resource: "github/list", want: Allow, source: SourceDefault},
		{name: "permission allow then policy deny", config: Config{Permissions: []string{"tool:github/*"}, ToolPolicies: policies("deny github/delete_*")},
			action: tool, resource: "github/delete_repo", want: Deny, source: SourceToolPolicy},
		{name: "permission deny before policy allow", config: Config{Permissions: []string{"tool:github/*"}, ToolPolicies: policies("allow */*")},
			action: tool, resource: "slack/post", want: Deny, source: SourcePermissions},
		{name: "permission allow, no policy matches", config: Config{Permissions: []string{"tool:github/*"}, ToolPolicies: policies("deny slack/*")},
			action: tool, resource: "github/list", want: Allow, source: SourcePermissions},
		{name: "policies ignored for http", config: Config{ToolPolicies: policies("deny */*", "deny api.example.com/*")},
			action: httpReq, resource: "api.example.com", want: Allow, source: SourceDefault},
		{name: "policies ignored for models even when the glob matches", config: Config{ToolPolicies: policies("deny */*")},
			action: model, resource: "team/general", want: Allow, source: SourceDefault},
		{name: "policies ignored for workflows", config: Config{Permissions: []string{"workflow:*"}, ToolPolicies: policies("consent */*")},
			action: workflow, resource: "a/b", want: Allow, source: SourcePermissions},

		// Step 3: consent.
		{name: "consent with route", config: Config{ToolPolicies: pager, ConsentAvailable: true},
			action: tool, resource: "pager/page_oncall", want: Consent, source: SourceToolPolicy, reason: []string{"pages a human"}},
		{name: "consent without route", config: Config{ToolPolicies: pager},
			action: tool, resource: "pager/page_oncall", want: Deny, source: SourceToolPolicy,
			reason: []string{"consent required, no interaction route", `toolPolicies[0] "pager/*"`}},
		{name: "object grant satisfies consent", config: Config{ToolPolicies: pager,
			Grants: grants(t, `[{"action":"tool.call","resource":"pager/*"}]`)},
			action: tool, resource: "pager/page_oncall", want: Allow, source: SourceAuthorization,
			reason: []string{`authorization.grants[0] "tool:pager/*"`, `toolPolicies[0] "pager/*"`}},
		{name: "short grant satisfies consent", config: Config{ToolPolicies: pager, ConsentAvailable: true,
			Grants: grants(t, `["model:*", "tool:pager/page_oncall"]`)},
			action: tool, resource: "pager/page_oncall", want: Allow, source: SourceAuthorization,
			reason: []string{"authorization.grants[1]"}},
		{name: "grant for another resource", config: Config{ToolPolicies: pager, ConsentAvailable: true,
			Grants: grants(t, `["tool:pager/ack"]`)},
			action: tool, resource: "pager/page_oncall", want: Consent, source: SourceToolPolicy},
		{name: "grant for another resource without route", config: Config{ToolPolicies: pager,
			Grants: grants(t, `["tool:pager/ack"]`)},
			action: tool, resource: "pager/page_oncall", want: Deny, source: SourceToolPolicy,
			reason: []string{"consent required, no interaction route"}},
		{name: "grant for another action", config: Config{ToolPolicies: pager, ConsentAvailable: true,
			Grants: grants(t, `[{"action":"workflow.run","resource":"*"}]`)},
			action: tool, resource: "pager/page_oncall", want: Consent, source: SourceToolPolicy},
		{name: "grant does not override a deny policy", config: Config{ToolPolicies: mixed, Grants: grants(t, `["tool:*"]`)},
			action: tool, resource: "github/delete_repo", want: Deny, source: SourceToolPolicy},
		{name: "grant does not override permissions", config: Config{Permissions: []string{"model:*"},
			ToolPolicies: pager, Grants: grants(t, `["tool:*"]`)},
			action: tool, resource: "pager/page_oncall", want: Deny, source: SourcePermissions},
		{name: "grant alone is not a source", config: Config{Grants: grants(t, `["tool:*", "model:*"]`)},
			action: tool, resource: "github/list", want: Allow, source: SourceDefault},
		{name: "grant does not allow what empty permissions deny", config: Config{Permissions: []string{}, Grants: grants(t, `["model:*"]`)},
			action: model, resource: "general", want: Deny, source: SourcePermissions},
		{name: "permission, consent and grant", config: Config{Permissions: []string{"tool:pager/*"}, ToolPolicies: pager,
			Grants: grants(t, `["tool:pager/*"]`)},
			action: tool, resource: "pager/page_oncall", want: Allow, source: SourceAuthorization},

		// Fail closed.
		{name: "unknown action", config: Config{},
			action: "file.write", resource: "/etc/passwd", want: Deny, source: SourceDefault, reason: []string{`unknown action "file.write"`}},
	}
	if len(tests) < 30 {
		t.Fatalf("only %d decision cases", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(tt.config)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got := d.Decide(tt.action, tt.resource)
			wantResource := tt.wantResource
			if wantResource == "" {
				wantResource = tt.resource
			}
			if got.Outcome != tt.want || got.Source != tt.source || got.Action != tt.action || got.Resource != wantResource {
				t.Errorf("Decide(%q, %q) = %s %q %s/%s, want %s/%s on %q (reason %q)",
					tt.action, tt.resource, got.Action, got.Resource, got.Outcome, got.Source, tt.want, tt.source, wantResource, got.Reason)
			}
			if !strings.HasPrefix(got.Reason, string(got.Source)+": ") {
				t.Errorf("reason %q does not start with its source %q", got.Reason, got.Source)
			}
			for _, s := range tt.reason {
				if !strings.Contains(got.Reason, s) {
					t.Errorf("reason %q does not contain %q", got.Reason, s)
				}
			}
			if got.Allowed() != (tt.want == Allow) {
				t.Errorf("Allowed() = %v for %s", got.Allowed(), got.Outcome)
			}
		})
	}
}

func TestNormalizeHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM", "api.example.com"},
		{"api.example.com:8443", "api.example.com"},
		{"api.example.com.", "api.example.com"},
		{"api.example.com.:443", "api.example.com"},
		{"api.example.com..", "api.example.com"},
		{"[::1]:8080", "::1"},
		{"[2001:DB8::1]", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1"},
		{"127.0.0.1:80", "127.0.0.1"},
		{"", ""},
		{":80", ""},
	}
	for _, tt := range tests {
		got := NormalizeHost(tt.in)
		if got != tt.want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := NormalizeHost(got); again != got {
			t.Errorf("NormalizeHost is not idempotent on %q: %q then %q", tt.in, got, again)
		}
	}
}

// A Decider must not change when the caller reuses the slices it was built
// from: the request may be mutated or pooled after validation.
func TestNewCopiesConfig(t *testing.T) {
	c := Config{
		Permissions:  []string{"tool:github/*"},
		ToolPolicies: policies("consent github/*"),
		Grants:       grants(t, `["tool:github/*"]`),
	}
	d, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Permissions[0] = "tool:*"
	c.ToolPolicies[0] = protocol.ToolPolicy{Match: "*/*", Decision: "deny"}
	c.Grants[0] = protocol.Grant{Action: tool, Resource: "nothing/here"}
	if got := d.Decide(tool, "github/list"); got.Outcome != Allow || got.Source != SourceAuthorization {
		t.Errorf("after mutating the config: %+v, want allow/authorization", got)
	}
	if got := d.Decide(tool, "slack/post"); got.Outcome != Deny || got.Source != SourcePermissions {
		t.Errorf("after mutating the config: %+v, want deny/permissions", got)
	}
}

// Run with -race: the engine decides from concurrently running nodes.
func TestDecideConcurrent(t *testing.T) {
	d, err := New(Config{
		Permissions:      []string{"tool:*", "http:*.example.com"},
		ToolPolicies:     policies("allow */*", "consent pager/*", "deny */delete_*"),
		Grants:           grants(t, `["tool:pager/ack"]`),
		ConsentAvailable: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		action, resource string
		want             Outcome
	}{
		{tool, "github/list", Allow},
		{tool, "pager/page", Consent},
		{tool, "pager/ack", Allow},
		{tool, "github/delete_repo", Deny},
		{httpReq, "API.example.com:443", Allow},
		{httpReq, "example.com", Deny},
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := cases[(g+i)%len(cases)]
				if got := d.Decide(c.action, c.resource); got.Outcome != c.want {
					t.Errorf("Decide(%q, %q) = %s, want %s", c.action, c.resource, got.Outcome, c.want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// The engine marshals a Decision into the permission.decision event, whose
// field names DESIGN §2 fixes.
func TestDecisionJSON(t *testing.T) {
	d, err := New(Config{Permissions: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d.Decide(tool, "github/list"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action":"tool.call","resource":"github/list","decision":"deny","source":"permissions","reason":"permissions: no entry matches tool:github/list"}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}

func ExampleDecider_Decide() {
	d, err := New(Config{
		Permissions:  []string{"tool:github/*", "http:*.github.com"},
		ToolPolicies: []protocol.ToolPolicy{{Match: "github/delete_*", Decision: "deny", Reason: "destructive"}},
	})
	if err != nil {
		panic(err)
	}
	for _, a := range [][2]string{
		{"tool.call", "github/create_issue"},
		{"tool.call", "github/delete_repo"},
		{"http.request", "API.GitHub.com:443"},
		{"model.invoke", "general"},
	} {
		dec := d.Decide(a[0], a[1])
		fmt.Printf("%s %s: %s (%s)\n", dec.Action, dec.Resource, dec.Outcome, dec.Reason)
	}
	// Output:
	// tool.call github/create_issue: allow (permissions: permissions[0] "tool:github/*" allows tool:github/create_issue)
	// tool.call github/delete_repo: deny (toolPolicy: toolPolicies[0] "github/delete_*" denies tool:github/delete_repo: destructive)
	// http.request api.github.com: allow (permissions: permissions[1] "http:*.github.com" allows http:api.github.com)
	// model.invoke general: deny (permissions: no entry matches model:general)
}
