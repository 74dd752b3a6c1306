package engine

import (
	"fmt"
	"strings"
	"testing"
)

// Every action a request's nodes name is matched against each of its
// lists of patterns, in preflight and again as the nodes run: 5,000 tool
// nodes under 50,000 permissions took 6 s to decide, after acceptance. A
// list longer than glob.MaxList is refused before acceptance, at its path.
func TestHostilePatternLists(t *testing.T) {
	list := func(n int, item func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = item(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	const n = 1001
	wf := `{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}`
	tests := []struct{ name, extra, path string }{
		{"permissions", `"permissions":` + list(n, func(i int) string { return fmt.Sprintf(`"tool:ts%d/*"`, i) }), "permissions"},
		{"tool policies", `"toolPolicies":` + list(n, func(i int) string { return fmt.Sprintf(`{"match":"ts%d/*","decision":"allow"}`, i) }), "toolPolicies"},
		{"grants", `"authorization":{"grants":` + list(n, func(i int) string { return fmt.Sprintf(`{"action":"tool.call","resource":"ts%d/*"}`, i) }) + `}`, "authorization.grants"},
		{"allowHosts", `"runtime":{"http":{"policy":{"allowHosts":` + list(n, func(i int) string { return fmt.Sprintf(`"h%d.example.com"`, i) }) + `}}}`, "runtime.http.policy.allowHosts"},
		{"denyHosts", `"runtime":{"http":{"policy":{"denyHosts":` + list(n, func(i int) string { return fmt.Sprintf(`"h%d.example.com"`, i) }) + `}}}`, "runtime.http.policy.denyHosts"},
		{"a secret's hosts", `"runtime":{"http":{"secrets":{"k":{"value":"v","hosts":` + list(n, func(i int) string { return fmt.Sprintf(`"h%d.example.com"`, i) }) + `}}}}`, "runtime.http.secrets.k.hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := prepareInvalid(t, newTestEngine(nil), fmt.Sprintf(`{"version":1,"workflow":%s,%s}`, wf, tt.extra))
			for _, d := range inv.Details {
				if d.Path == tt.path && strings.Contains(d.Message, "1001 patterns, more than the 1000 one list may hold") {
					return
				}
			}
			t.Errorf("no bound at %s: %+v", tt.path, inv.Details[:min(3, len(inv.Details))])
		})
	}
	// At the bound, a list is taken.
	prepareReq(t, newTestEngine(nil), fmt.Sprintf(`{"version":1,"workflow":%s,"permissions":%s}`, wf, list(1000, func(i int) string { return fmt.Sprintf(`"tool:ts%d/*"`, i) })))
}
