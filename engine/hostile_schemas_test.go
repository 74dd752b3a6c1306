package engine

import (
	"fmt"
	"strings"
	"testing"
)

// A compiled schema holds 80–180 times its text, so a request's schemas
// are bounded together, not only one by one: model nodes' json schemas of
// 200 KB each, distinct, would each have passed maxSchemaBytes. The same
// schema repeated (a fan-out's nodes) counts once.
func TestHostileSchemaTotal(t *testing.T) {
	models := `"runtime":{"models":[{"role":"general","provider":"openai","model":"m","apiKey":"k"}]}`
	schemaOf := func(i, size int) string {
		return fmt.Sprintf(`{"description":"%d %s"}`, i, strings.Repeat("x", size))
	}
	nodes := func(n int, schema func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"id":"m%d","type":"model","with":{"prompt":"p","json":%s}}`, i, schema(i))
		}
		return `{"nodes":[` + strings.Join(parts, ",") + `]}`
	}
	t.Run("distinct schemas add up", func(t *testing.T) {
		body := fmt.Sprintf(`{"version":1,"workflow":%s,%s}`, nodes(3, func(i int) string { return schemaOf(i, 100<<10) }), models)
		inv := prepareInvalid(t, newTestEngine(nil), body)
		for _, d := range inv.Details {
			if d.Path == "workflow.nodes[2].with.json" && strings.Contains(d.Message, "the request's schemas would be") {
				return
			}
		}
		t.Errorf("no bound on the schemas together: %+v", inv.Details)
	})
	t.Run("an input schema and a json schema add up", func(t *testing.T) {
		body := fmt.Sprintf(`{"version":1,"workflow":{"input":%s,"nodes":[{"id":"m","type":"model","with":{"prompt":"p","json":%s}}]},%s}`,
			schemaOf(0, 200<<10), schemaOf(1, 100<<10), models)
		inv := prepareInvalid(t, newTestEngine(nil), body)
		if !strings.Contains(fmt.Sprint(inv.Details), "the request's schemas would be") {
			t.Errorf("no bound on the schemas together: %+v", inv.Details)
		}
	})
	t.Run("one schema repeated counts once", func(t *testing.T) {
		prepareReq(t, newTestEngine(nil), fmt.Sprintf(`{"version":1,"workflow":%s,%s}`, nodes(100, func(int) string { return schemaOf(0, 10<<10) }), models))
	})
	t.Run("a json schema over maxSchemaBytes alone", func(t *testing.T) {
		body := fmt.Sprintf(`{"version":1,"workflow":%s,%s}`, nodes(1, func(i int) string { return schemaOf(i, 300<<10) }), models)
		inv := prepareInvalid(t, newTestEngine(nil), body)
		if !strings.Contains(fmt.Sprint(inv.Details), "over maxSchemaBytes (262144)") {
			t.Errorf("a json schema of 300 KB: %+v", inv.Details)
		}
	})
}
