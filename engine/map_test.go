package engine

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMapRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name      string
		wf, input string
		limits    func(*Limits)
		output    string   // the result's output; "" when the execution fails
		nodeID    string   // the node the terminal error names
		message   string   // a fragment of the terminal error's message
		failed    []string // "id=CODE": the last node.failed of id has CODE
		started   []string // node.started ids that must be there, in any order
	}{{
		// Later items finish first (they sleep less), so order comes from
		// the item index, not from completion.
		name: "items expression, per-item output, result in item order",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input.list }}","nodes":[
			{"id":"inner","type":"probe","with":{"value":"${{ item * 10 }}","sleepMs":"${{ (5 - index) * 8 }}"}}],
			"output":{"i":"${{ index }}","v":"${{ nodes.inner.output }}"}}}],"output":"${{ nodes.each.output }}"}`,
		input:   `{"list":[1,2,3,4,5]}`,
		output:  `[{"i":0,"v":10},{"i":1,"v":20},{"i":2,"v":30},{"i":3,"v":40},{"i":4,"v":50}]`,
		started: []string{"each", "each[0].inner", "each[1].inner", "each[2].inner", "each[3].inner", "each[4].inner"},
	}, {
		name: "without output each item yields its sink nodes",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":["a","b"],"nodes":[
			{"id":"x","type":"set","with":{"value":"${{ item }}"}},
			{"id":"y","type":"set","needs":["x"],"with":{"value":"${{ nodes.x.output + '!' }}"}}]}}],"output":"${{ nodes.each.output }}"}`,
		output:  `[{"y":"a!"},{"y":"b!"}]`,
		started: []string{"each[0].x", "each[0].y", "each[1].x", "each[1].y"},
	}, {
		name:   "empty items yield an empty array",
		wf:     `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input }}","nodes":[{"id":"inner","type":"set","with":{"value":1}}]}}],"output":"${{ nodes.each.output }}"}`,
		input:  `[]`,
		output: `[]`,
	}, {
		name:   "a range expression is an array",
		wf:     `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..3 }}","concurrency":"${{ 2 }}","nodes":[{"id":"inner","type":"set","with":{"value":"${{ item + index }}"}}],"output":"${{ nodes.inner.output }}"}}],"output":"${{ nodes.each.output }}"}`,
		output: `[1,3,5]`,
	}, {
		name: "outer nodes and input are in scope inside the iteration",
		wf: `{"nodes":[{"id":"pre","type":"set","with":{"value":100}},
			{"id":"each","type":"map","needs":["pre"],"with":{"items":"${{ input }}","nodes":[
				{"id":"inner","type":"set","with":{"value":"${{ nodes.pre.output + item }}"}}],"output":"${{ nodes.inner.output }}"}}],
			"output":"${{ nodes.each.output }}"}`,
		input:  `[1,2]`,
		output: `[101,102]`,
	}, {
		name: "nested maps see their own item and nest ids",
		wf: `{"nodes":[{"id":"outer","type":"map","with":{"items":"${{ input }}","nodes":[
			{"id":"inner","type":"map","with":{"items":"${{ item }}","nodes":[
				{"id":"leaf","type":"set","with":{"value":"${{ item * 10 + index }}"}}],"output":"${{ nodes.leaf.output }}"}}],
			"output":"${{ nodes.inner.output }}"}}],"output":"${{ nodes.outer.output }}"}`,
		input:   `[[1,2],[3]]`,
		output:  `[[10,21],[30]]`,
		started: []string{"outer[0].inner[0].leaf", "outer[0].inner[1].leaf", "outer[1].inner[0].leaf"},
	}, {
		name:    "items that are not an array are an in-band EXPRESSION_ERROR",
		wf:      `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input.n }}","nodes":[{"id":"inner","type":"set"}]}}]}`,
		input:   `{"n":7}`,
		nodeID:  "each",
		message: "with.items must evaluate to an array, got a number",
		failed:  []string{"each=EXPRESSION_ERROR"},
	}, {
		name:    "items that fail to evaluate are an EXPRESSION_ERROR",
		wf:      `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input.a.b.c }}","nodes":[{"id":"inner","type":"set"}]}}]}`,
		input:   `{}`,
		nodeID:  "each",
		message: "EXPRESSION_ERROR",
		failed:  []string{"each=EXPRESSION_ERROR"},
	}, {
		name:    "more items than maxMapItems is LIMIT_EXCEEDED",
		wf:      `{"nodes":[{"id":"each","type":"map","retry":{"maxAttempts":3},"with":{"items":"${{ input }}","nodes":[{"id":"inner","type":"set"}]}}]}`,
		input:   `[1,2,3,4]`,
		limits:  func(l *Limits) { l.MaxMapItems = 3 },
		nodeID:  "each",
		message: "maxMapItems (3)",
		failed:  []string{"each=LIMIT_EXCEEDED"},
	}, {
		name:   "exactly maxMapItems items run",
		wf:     `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input }}","nodes":[{"id":"inner","type":"set","with":{"value":"${{ item }}"}}],"output":"${{ nodes.inner.output }}"}}],"output":"${{ nodes.each.output }}"}`,
		input:  `[1,2,3]`,
		limits: func(l *Limits) { l.MaxMapItems = 3 },
		output: `[1,2,3]`,
	}, {
		name: "an inner failure fails the map and the terminal error names the inner node",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input }}","concurrency":1,"nodes":[
			{"id":"inner","type":"set","with":{"value":"${{ item }}"}},
			{"id":"boom","type":"fail","needs":["inner"],"when":"index == 2","with":{"message":"item ${{ item }} is bad"}}]}}]}`,
		input:   `["a","b","c","d"]`,
		nodeID:  "each[2].boom",
		message: "node each[2].boom failed: FAILED: item c is bad",
		failed:  []string{"each[2].boom=FAILED", "each=FAILED"},
		started: []string{"each[0].inner", "each[1].inner", "each[2].inner"},
	}, {
		name: "onError continue inside an iteration keeps the map going",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2],"nodes":[
			{"id":"boom","type":"fail","onError":"continue","with":{"code":"NOPE"}},
			{"id":"after","type":"set","needs":["boom"],"when":"nodes.boom.status == 'failed'","with":{"value":"${{ nodes.boom.error.code }}"}}],
			"output":"${{ nodes.after.output }}"}}],"output":"${{ nodes.each.output }}"}`,
		output: `["NOPE","NOPE"]`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(tt.limits)
			s := wtRun(t, nil, e, wtReq(t, tt.wf, tt.input))
			s.checkOutcome(t, tt.output, tt.nodeID, tt.message, tt.failed, tt.started)
		})
	}
}

// TestMapConcurrencyObserved counts iterations running at once with a probe
// that sleeps: the peak must reach the bound and never pass it.
func TestMapConcurrencyObserved(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name           string
		concurrency    string // with.concurrency as written; "" for none
		maxConcurrency int
		want           int
	}{
		{name: "one at a time", concurrency: "1", maxConcurrency: 16, want: 1},
		{name: "three", concurrency: "3", maxConcurrency: 16, want: 3},
		{name: "from an expression", concurrency: `"${{ input.c }}"`, maxConcurrency: 16, want: 4},
		{name: "clipped to maxConcurrency", concurrency: "10", maxConcurrency: 4, want: 4},
		{name: "default is maxConcurrency", concurrency: "", maxConcurrency: 5, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, probe := wtEngine(func(l *Limits) { l.MaxConcurrency = tt.maxConcurrency })
			conc := ""
			if tt.concurrency != "" {
				conc = `"concurrency":` + tt.concurrency + `,`
			}
			wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..12 }}",` + conc + `"nodes":[
				{"id":"inner","type":"probe","with":{"sleepMs":40,"value":"${{ item }}"}}],"output":"${{ nodes.inner.output }}"}}],
				"output":"${{ nodes.each.output }}"}`
			s := wtRun(t, nil, e, wtReq(t, wf, `{"c":4}`))
			wtSameJSON(t, "output", s.result(t).Output, `[1,2,3,4,5,6,7,8,9,10,11,12]`)
			if got := probe.peakRunning(); got != tt.want {
				t.Errorf("at most %d iterations ran at once, want %d", got, tt.want)
			}
		})
	}
}

// TestMapPrepare covers what is refused before acceptance.
func TestMapPrepare(t *testing.T) {
	tests := []struct {
		name      string
		with      string
		path      string
		fragments []string
	}{
		{"literal items over maxMapItems", `{"items":[1,2,3,4],"nodes":[{"id":"a","type":"set"}]}`, "workflow.nodes[0].with.items", []string{"maxMapItems (3)"}},
		{"items neither array nor expression", `{"items":"abc","nodes":[{"id":"a","type":"set"}]}`, "workflow.nodes[0].with.items", nil},
		{"concurrency zero", `{"items":[1],"concurrency":0,"nodes":[{"id":"a","type":"set"}]}`, "workflow.nodes[0].with.concurrency", nil},
		{"no nodes", `{"items":[1],"nodes":[]}`, "workflow.nodes[0].with.nodes", nil},
		{"missing items", `{"nodes":[{"id":"a","type":"set"}]}`, "workflow.nodes[0].with", []string{"items"}},
		{"item outside a map", `{"items":"${{ item }}","nodes":[{"id":"a","type":"set"}]}`, "workflow.nodes[0].with.items", []string{"only in scope inside a map"}},
		{"inner need unknown", `{"items":[1],"nodes":[{"id":"a","type":"set","needs":["zz"]}]}`, "workflow.nodes[0].with.nodes[0].needs[0]", []string{`unknown node id "zz"`}},
		{"inner duplicate id", `{"items":[1],"nodes":[{"id":"a","type":"set"},{"id":"a","type":"set"}]}`, "workflow.nodes[0].with.nodes[1].id", []string{"duplicate"}},
		{"inner stateless type", `{"items":[1],"nodes":[{"id":"w","type":"approval"}]}`, "workflow.nodes[0].with.nodes[0].type", []string{`node "w"`, "checkpoint"}},
		{"output referring to an unknown node", `{"items":[1],"nodes":[{"id":"a","type":"set"}],"output":"${{ nodes.zz.output }}"}`, "workflow.nodes[0].with.output", []string{"nodes.zz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) { l.MaxMapItems = 3 })
			wf := fmt.Sprintf(`{"nodes":[{"id":"each","type":"map","with":%s}]}`, tt.with)
			details := wtInvalid(t, e, wtReq(t, wf, ""))
			if !wtHasDetail(details, tt.path, tt.fragments...) {
				t.Errorf("details %s\nwant one at %s with %q", wtJSON(details), tt.path, tt.fragments)
			}
		})
	}
}
