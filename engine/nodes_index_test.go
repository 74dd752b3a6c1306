package engine

import (
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// nodes read by a computed id, or whole: what each place sees. The id
// comes from the input, so that nothing is known before the run.
func TestNodesIndexed(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name      string
		wf, input string
		limits    func(*Limits)
		output    string
		nodeID    string
		message   string
		failed    []string
	}{{
		name: "an upstream node, direct or transitive",
		wf: `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","needs":["a"],"with":{"value":2}},
			{"id":"c","type":"set","needs":["b"],"with":{"value":["${{ nodes[input.near].output }}","${{ nodes[input.far].output }}","${{ nodes[input.far].status }}"]}}],
			"output":"${{ nodes.c.output }}"}`,
		input:  `{"near":"b","far":"a"}`,
		output: `[2,1,"completed"]`,
	}, {
		// a has ended before c runs (c needs b, which needs a... not): a
		// is not upstream of c, so c does not see it, however the run goes.
		name: "a node that is not upstream reads as nil",
		wf: `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","with":{"value":2}},
			{"id":"c","type":"set","needs":["b"],"with":{"value":"${{ nodes[input.id] == nil }}"}}],"output":"${{ nodes.c.output }}"}`,
		input:  `{"id":"a"}`,
		output: `true`,
	}, {
		name:   "an id no node has reads as nil",
		wf:     `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"c","type":"set","needs":["a"],"with":{"value":"${{ nodes[input.id]?.output ?? 'none' }}"}}],"output":"${{ nodes.c.output }}"}`,
		input:  `{"id":"zz"}`,
		output: `"none"`,
	}, {
		name:   "the node itself is not upstream of itself",
		wf:     `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"c","type":"set","needs":["a"],"with":{"value":"${{ nodes[input.id] == nil }}"}}],"output":"${{ nodes.c.output }}"}`,
		input:  `{"id":"c"}`,
		output: `true`,
	}, {
		name:    "an id that is not a string is an EXPRESSION_ERROR",
		wf:      `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"c","type":"set","needs":["a"],"with":{"value":"${{ nodes[input.n] }}"}}]}`,
		input:   `{"n":1}`,
		nodeID:  "c",
		message: "nodes is indexed by a node id, a string, not a number",
		failed:  []string{"c=EXPRESSION_ERROR"},
	}, {
		name:   "in a predicate",
		wf:     `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","with":{"value":2}},{"id":"c","type":"set","needs":["a","b"],"with":{"value":"${{ map(input.ids, nodes[#].output) }}"}}],"output":"${{ nodes.c.output }}"}`,
		input:  `{"ids":["b","a","b"]}`,
		output: `[2,1,2]`,
	}, {
		name:   "the workflow's output sees every node",
		wf:     `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","with":{"value":2}}],"output":"${{ [nodes[input.x].output, nodes[input.y].output] }}"}`,
		input:  `{"x":"b","y":"a"}`,
		output: `[2,1]`,
	}, {
		name: "inside a map's iteration: its upstream nodes and the map node's",
		wf: `{"nodes":[{"id":"pre","type":"set","with":{"value":100}},
			{"id":"each","type":"map","needs":["pre"],"with":{"items":"${{ input.list }}","nodes":[
				{"id":"x","type":"set","with":{"value":"${{ item }}"}},
				{"id":"y","type":"set","needs":["x"],"with":{"value":"${{ nodes[input.outer].output + nodes[input.inner].output }}"}}],
				"output":"${{ nodes.y.output }}"}}],"output":"${{ nodes.each.output }}"}`,
		input:  `{"list":[1,2],"outer":"pre","inner":"x"}`,
		output: `[101,102]`,
	}, {
		// The map node's own needs are read by name nowhere: its output
		// still sees them, as nodes.pre would.
		name: "a map's output: the iteration's nodes and the map node's upstream",
		wf: `{"nodes":[{"id":"pre","type":"set","with":{"value":100}},
			{"id":"each","type":"map","needs":["pre"],"with":{"items":"${{ input.list }}","nodes":[
				{"id":"x","type":"set","with":{"value":"${{ item }}"}}],
				"output":"${{ nodes[input.outer].output + nodes[input.inner].output }}"}}],"output":"${{ nodes.each.output }}"}`,
		input:  `{"list":[1,2],"outer":"pre","inner":"x"}`,
		output: `[101,102]`,
	}, {
		name: "inside a map's iteration, a node of the enclosing graph that is not the map's upstream reads as nil",
		wf: `{"nodes":[{"id":"pre","type":"set","with":{"value":100}},{"id":"other","type":"set","with":{"value":7}},
			{"id":"each","type":"map","needs":["pre"],"with":{"items":[1],"nodes":[
				{"id":"x","type":"set","with":{"value":"${{ nodes[input.id] == nil }}"}}],"output":"${{ nodes.x.output }}"}}],"output":"${{ nodes.each.output }}"}`,
		input:  `{"id":"other"}`,
		output: `[true]`,
	}, {
		name: "nodes whole: the upstream nodes only",
		wf: `{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","needs":["a"],"with":{"value":2}},{"id":"z","type":"set","with":{"value":3}},
			{"id":"c","type":"set","needs":["b"],"with":{"value":"${{ sort(keys(nodes)) }}"}}],"output":"${{ nodes.c.output }}"}`,
		output: `["a","b"]`,
	}, {
		name: "nodes whole in a map's output",
		wf: `{"nodes":[{"id":"pre","type":"set","with":{"value":100}},
			{"id":"each","type":"map","needs":["pre"],"with":{"items":[1],"nodes":[{"id":"x","type":"set","with":{"value":"${{ item }}"}}],
				"output":"${{ sort(keys(nodes)) }}"}}],"output":"${{ nodes.each.output }}"}`,
		output: `[["pre","x"]]`,
	}, {
		// Each node of the chain reads nodes whole: building it is charged
		// per node it holds (2 steps), so a budget of 50 steps ends the
		// chain where the map would hold 25 nodes.
		name:    "building nodes whole is charged to the evaluation",
		wf:      lenChain(40),
		limits:  func(l *Limits) { l.MaxExprSteps = 50 },
		nodeID:  "n25",
		message: "maxExprSteps (50)",
		failed:  []string{"n25=LIMIT_EXCEEDED"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(tt.limits)
			s := wtRun(t, nil, e, wtReq(t, tt.wf, tt.input))
			s.checkOutcome(t, tt.output, tt.nodeID, tt.message, tt.failed, nil)
		})
	}
}

// lenChain is a chain of n set nodes n0…, each reading len(nodes).
func lenChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"nodes":[`)
	for i := range n {
		if i > 0 {
			fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ len(nodes) }}"}}`, i, i-1)
		} else {
			b.WriteString(`{"id":"n0","type":"set","with":{"value":0}}`)
		}
	}
	fmt.Fprintf(&b, `],"output":"${{ nodes.n%d.output }}"}`, n-1)
	return b.String()
}

// A chain of maxNodes nodes, each reading its predecessor by a computed
// id: every evaluation used to build a map of all the node's ancestors
// (50 million entries in all, 10.7 s and gigabytes allocated); it looks
// the one node up, so what the run allocates grows with the chain.
func TestHostileNodesIndexedChain(t *testing.T) {
	const n = 10_000
	var b strings.Builder
	b.WriteString(`{"nodes":[{"id":"n0","type":"set","with":{"value":0}}`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes[lower('N%d')].output + 1 }}"}}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `],"output":"${{ nodes.n%d.output }}"}`, n-1)
	e, _ := wtEngine(nil)
	req := wtReq(t, b.String(), "")
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(allocs)
	before := allocs[0].Value.Uint64()
	s := wtRun(t, nil, e, req)
	metrics.Read(allocs)
	alloc := allocs[0].Value.Uint64() - before
	s.checkOutcome(t, fmt.Sprint(n-1), "", "", nil, nil)
	t.Logf("the run allocated %d MB", alloc>>20)
	if alloc > 200<<20 {
		t.Errorf("the run allocated %d MB, over 200", alloc>>20)
	}
}

// A child workflow sees its own nodes only, by a computed id as by name.
func TestNodesIndexedInChild(t *testing.T) {
	child := `{"id":"kid","nodes":[{"id":"x","type":"set","with":{"value":5}},
		{"id":"y","type":"set","needs":["x"],"with":{"value":["${{ nodes[input.own].output }}","${{ nodes[input.parent] == nil }}","${{ len(nodes) }}"]}}],
		"output":"${{ nodes.y.output }}"}`
	wf := `{"nodes":[{"id":"pre","type":"set","with":{"value":1}},
		{"id":"call","type":"workflow","needs":["pre"],"with":{"workflow":"kid","input":{"own":"x","parent":"pre"}}}],"output":"${{ nodes.call.output }}"}`
	e, _ := wtEngine(nil)
	s := wtRun(t, nil, e, wtReq(t, wf, "", child))
	s.checkOutcome(t, `[5,true,1]`, "", "", nil, nil)
}
