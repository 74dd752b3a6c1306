package engine

import (
	"fmt"
	"testing"
)

// TestNodeRefMemory: a reference remembers where it found its node
// (scope.NodeRef), and the memory never answers for another graph: the
// same text in workflows whose node sits at another index, in a map's
// graph that shadows an outer node of the same id, and reading an outer
// node from inside a map, each run in turn and again (compiled forms are
// shared by text across requests), give the outputs they give alone.
func TestNodeRefMemory(t *testing.T) {
	const ref = `"${{ nodes.b.output + 1 }}"`
	docs := []struct{ name, wf, want string }{
		{"b second", `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","with":{"value":2}},
			{"id":"x","type":"set","needs":["a","b"],"with":{"value":` + ref + `}}],"output":"${{ nodes.x.output }}"}`, `3`},
		{"b first", `{"nodes":[{"id":"b","type":"set","with":{"value":10}},{"id":"a","type":"set","with":{"value":20}},
			{"id":"x","type":"set","needs":["a","b"],"with":{"value":` + ref + `}}],"output":"${{ nodes.x.output }}"}`, `11`},
		{"b shadowed in a map", `{"nodes":[{"id":"b","type":"set","with":{"value":100}},
			{"id":"each","type":"map","needs":["b"],"with":{"items":[5,6],"nodes":[
				{"id":"pad","type":"set","with":{"value":0}},
				{"id":"b","type":"set","with":{"value":"${{ item }}"}},
				{"id":"x","type":"set","needs":["b","pad"],"with":{"value":` + ref + `}}],"output":"${{ nodes.x.output }}"}},
			{"id":"x","type":"set","needs":["each"],"with":{"value":` + ref + `}}],
			"output":{"inner":"${{ nodes.each.output }}","outer":"${{ nodes.x.output }}"}}`, `{"inner":[6,7],"outer":101}`},
		{"outer b read in a map", `{"nodes":[{"id":"pad","type":"set","with":{"value":0}},{"id":"b","type":"set","with":{"value":40}},
			{"id":"each","type":"map","needs":["b","pad"],"with":{"items":[1,2],"nodes":[
				{"id":"x","type":"set","with":{"value":` + ref + `}}],"output":"${{ nodes.x.output }}"}}],
			"output":"${{ nodes.each.output }}"}`, `[41,41]`},
		// Iterations at once, each its own graph run of one graph: the
		// memory is shared by all of them (run under -race).
		{"b shadowed in concurrent iterations", `{"nodes":[{"id":"b","type":"set","with":{"value":-1}},
			{"id":"each","type":"map","needs":["b"],"with":{"items":"${{ 0..15 }}","concurrency":8,"nodes":[
				{"id":"b","type":"set","with":{"value":"${{ item }}"}},
				{"id":"x","type":"set","needs":["b"],"with":{"value":` + ref + `}}],"output":"${{ nodes.x.output }}"}}],
			"output":"${{ nodes.each.output }}"}`, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]`},
	}
	e := newTestEngine(nil)
	for round := range 3 {
		for _, d := range docs {
			t.Run(fmt.Sprintf("%s/%d", d.name, round), func(t *testing.T) {
				s, _ := runBody(t, e, `{"version":1,"workflow":`+d.wf+`}`)
				wantOutput(t, s.result(t), d.want)
			})
		}
	}
}
