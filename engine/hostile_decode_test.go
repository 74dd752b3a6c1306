package engine

import (
	"testing"
	"time"
)

// Hostile numbers in a workflow document: the schema rules compare numbers
// exactly but from their text, so an exponent of a billion costs nothing,
// and a number no float64 holds is refused where it is written.
func TestHostileDecodeNumbers(t *testing.T) {
	tests := []struct {
		name, wf, path, fragment string
	}{
		{"huge version", `{"version":1e999999999,"nodes":[]}`, "workflow.version", "value must be 1"},
		{"huge negative timeoutMs", `{"nodes":[{"id":"a","type":"set","timeoutMs":-1e999999999}]}`, "workflow.nodes[0].timeoutMs", "want integer"},
		{"huge needs are equal to nothing", `{"nodes":[{"id":"a","type":"set","needs":[1e9999999,1e9999999]}]}`, "workflow.nodes[0].needs[0]", "want string"},
		{"tiny maxAttempts", `{"nodes":[{"id":"a","type":"set","retry":{"maxAttempts":1e-999999999}}]}`, "workflow.nodes[0].retry.maxAttempts", "want integer"},
		{"with value out of float64 range", `{"nodes":[{"id":"a","type":"set","with":{"value":[1e400]}}]}`, "workflow.nodes[0].with", "1e400 is out of range"},
		{"map inner value out of range", `{"nodes":[{"id":"m","type":"map","with":{"items":[1],"nodes":[{"id":"a","type":"set","with":{"value":-1e400}}]}}]}`, "workflow.nodes[0].with", "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(nil)
			start := time.Now()
			d := wtInvalid(t, e, wtReq(t, tt.wf, "{}"))
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("checking took %v, want under 2s", el)
			}
			if !wtHasDetail(d, tt.path, tt.fragment) {
				t.Errorf("details %s, want one at %s saying %q", wtJSON(d), tt.path, tt.fragment)
			}
		})
	}
}
