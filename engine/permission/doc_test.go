package permission

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// TestDocsPermissions keeps docs/permissions.md honest: the reasons it quotes
// are the ones the decider produces for its example request.
func TestDocsPermissions(t *testing.T) {
	doc, err := os.ReadFile("../../docs/permissions.md")
	if err != nil {
		t.Fatal(err)
	}
	// The example request's permission fields, as in the doc.
	var req struct {
		Permissions   []string
		ToolPolicies  json.RawMessage
		Authorization struct{ Grants json.RawMessage }
	}
	fields := `"permissions": ["http:*.example.com", "tool:pager/*", "model:*"],
  "toolPolicies": [
    {"match": "*/delete_*", "decision": "deny", "reason": "destructive"},
    {"match": "pager/*", "decision": "consent", "reason": "pages a human"}
  ]`
	if !strings.Contains(string(doc), fields) {
		t.Fatalf("docs/permissions.md no longer holds the example fields:\n%s", fields)
	}
	example := "{" + fields + "}"
	if err := json.Unmarshal([]byte(example), &req); err != nil {
		t.Fatal(err)
	}
	c := Config{Permissions: req.Permissions, ToolPolicies: policiesJSON(t, req.ToolPolicies)}

	decide := func(c Config, action, resource string) Decision {
		t.Helper()
		d, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		return d.Decide(action, resource)
	}
	withRoute, withGrant := c, c
	withRoute.ConsentAvailable = true
	withGrant.Grants = grants(t, `["tool:pager/page_oncall"]`)
	quoted := []Decision{
		decide(withRoute, httpReq, "API.example.com:443"),
		decide(withRoute, tool, "pager/page_oncall"),
		decide(c, tool, "pager/page_oncall"),
		decide(withGrant, tool, "pager/page_oncall"),
	}
	// Reasons listed in the reasons section.
	listed := []Decision{
		decide(Config{Permissions: []string{}}, tool, "github/delete_repo"),
		decide(Config{Permissions: []string{"tool:*", "http:*.example.com"}}, httpReq, "api.example.com"),
		decide(Config{ToolPolicies: policies("deny github/delete_* destructive")}, tool, "github/delete_repo"),
		decide(withRoute, tool, "pager/page_oncall"),
		decide(c, tool, "pager/page_oncall"),
		decide(Config{ToolPolicies: c.ToolPolicies, Grants: grants(t, `["tool:pager/*"]`)}, tool, "pager/page_oncall"),
		decide(Config{}, model, "general"),
	}
	for _, d := range listed {
		if !strings.Contains(string(doc), d.Reason+"\n") {
			t.Errorf("docs/permissions.md does not list the reason\n%s", d.Reason)
		}
	}
	for _, d := range quoted {
		b, _ := json.Marshal(d)
		fields := strings.TrimSuffix(strings.TrimPrefix(string(b), "{"), "}")
		if !strings.Contains(string(doc), fields) {
			t.Errorf("docs/permissions.md has no event with\n%s", fields)
		}
	}
	if got := decide(withGrant, tool, "pager/delete_schedule"); got.Outcome != Deny {
		t.Errorf("the doc says a grant does not help pager/delete_schedule, got %+v", got)
	}
}

func policiesJSON(t *testing.T, raw json.RawMessage) []protocol.ToolPolicy {
	t.Helper()
	var ps []protocol.ToolPolicy
	if err := json.Unmarshal(raw, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}
