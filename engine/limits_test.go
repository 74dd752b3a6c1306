package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/protocol"
)

// TestLimitsInBand covers the limits an execution meets while it runs: each
// fails the node at fault with its code, in-band (after acceptance), without
// retrying, and the terminal error names that node.
func TestLimitsInBand(t *testing.T) {
	defer goleak.VerifyNone(t)
	big := strings.Repeat("x", 2000)
	tests := []struct {
		name    string
		wf      string
		limits  func(*Limits)
		output  string // the result's output; "" when the execution fails
		nodeID  string
		code    protocol.Code
		message string
	}{{
		name:    "one output over the per-node cap",
		wf:      `{"nodes":[{"id":"big","type":"set","retry":{"maxAttempts":3,"backoffMs":1},"with":{"value":"` + big + `"}}]}`,
		limits:  func(l *Limits) { l.MaxOutputBytes = 1000 },
		nodeID:  "big",
		code:    "OUTPUT_TOO_LARGE",
		message: "per-node cap of 1000 bytes",
	}, {
		name:   "an output under the cap",
		wf:     `{"nodes":[{"id":"small","type":"set","with":{"value":"` + big[:500] + `"}}],"output":"${{ len(nodes.small.output) }}"}`,
		limits: func(l *Limits) { l.MaxOutputBytes = 1000 },
		output: `500`,
	}, {
		name: "a map's whole output counts against the cap",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..10 }}","nodes":[
			{"id":"s","type":"set","with":{"value":"` + big[:200] + `"}}]}}]}`,
		limits:  func(l *Limits) { l.MaxOutputBytes = 1000 },
		nodeID:  "each",
		code:    "OUTPUT_TOO_LARGE",
		message: "per-node cap",
	}, {
		name: "outputs together over the memory budget",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..20 }}","concurrency":1,"nodes":[
			{"id":"s","type":"set","retry":{"maxAttempts":3,"backoffMs":1},"with":{"value":"` + big[:500] + `"}}]}}]}`,
		limits:  func(l *Limits) { l.MemoryBudget = 5000 },
		code:    "MEMORY_BUDGET_EXCEEDED",
		message: "memory budget of 5000 bytes",
	}, {
		name: "a budget that holds everything",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..5 }}","nodes":[
			{"id":"s","type":"set","with":{"value":"` + big[:100] + `"}}]}}],"output":"${{ len(nodes.each.output) }}"}`,
		limits: func(l *Limits) { l.MemoryBudget = 5000 },
		output: `5`,
	}, {
		name: "map iterations count towards maxNodes",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..10 }}","concurrency":1,"nodes":[
			{"id":"s","type":"set","retry":{"maxAttempts":3,"backoffMs":1},"with":{"value":1}}]}}]}`,
		limits:  func(l *Limits) { l.MaxNodes = 6 },
		nodeID:  "each[5].s", // the map node and five iterations make six
		code:    "LIMIT_EXCEEDED",
		message: "maxNodes (6)",
	}, {
		name: "map iterations up to maxNodes run",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..5 }}","nodes":[
			{"id":"s","type":"set","with":{"value":1}}]}}],"output":"${{ len(nodes.each.output) }}"}`,
		limits: func(l *Limits) { l.MaxNodes = 6 },
		output: `5`,
	}, {
		name: "child workflow nodes count towards maxNodes",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..3 }}","concurrency":1,"nodes":[
			{"id":"call","type":"workflow","with":{"workflow":"two"}}]}}]}`,
		limits:  func(l *Limits) { l.MaxNodes = 8 },
		nodeID:  "each[2].call.a",
		code:    "LIMIT_EXCEEDED",
		message: "maxNodes (8)",
	}}
	child := `{"id":"two","nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"]}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(tt.limits)
			s := wtRun(t, nil, e, wtReq(t, tt.wf, "", child))
			if tt.output != "" {
				wtSameJSON(t, "output", s.result(t).Output, tt.output)
				return
			}
			ee := s.execError(t)
			if tt.nodeID != "" && ee.NodeID != tt.nodeID {
				t.Errorf("terminal error names %q, want %q", ee.NodeID, tt.nodeID)
			}
			if !strings.Contains(ee.Message, string(tt.code)) || !strings.Contains(ee.Message, tt.message) {
				t.Errorf("terminal error %q, want %s and %q", ee.Message, tt.code, tt.message)
			}
			evs := s.failed(ee.NodeID)
			if len(evs) != 1 || evs[0].Error.Code != tt.code || evs[0].Retrying {
				t.Errorf("node.failed for %s: %s, want one %s, not retried", ee.NodeID, wtJSON(evs), tt.code)
			}
		})
	}
}

// TestMaxNodesPrepare covers a document that is too big before it runs: a
// 400 rather than an execution that fails half-way.
func TestMaxNodesPrepare(t *testing.T) {
	tests := []struct {
		name     string
		wf       string
		children []string
		max      int
		path     string // "" when the request is accepted
	}{
		{"top-level nodes", `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set"},{"id":"c","type":"set"},{"id":"d","type":"set"}]}`, nil, 3, "workflow.nodes"},
		{"exactly maxNodes", `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set"},{"id":"c","type":"set"}]}`, nil, 3, ""},
		{"map sub-graph nodes", `{"nodes":[{"id":"a","type":"set"},{"id":"m","type":"map","with":{"items":[1],"nodes":[{"id":"x","type":"set"},{"id":"y","type":"set"}]}}]}`, nil, 3, "workflow.nodes"},
		{"child workflow nodes", `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set"}]}`, []string{`{"id":"c","nodes":[{"id":"x","type":"set"},{"id":"y","type":"set"}]}`}, 3, "runtime.workflows[0].nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) { l.MaxNodes = tt.max })
			req := wtReq(t, tt.wf, "", tt.children...)
			if tt.path == "" {
				if _, err := e.Prepare(req); err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				return
			}
			if d := wtInvalid(t, e, req); !wtHasDetail(d, tt.path, "maxNodes (3)") {
				t.Errorf("details %s, want maxNodes at %s", wtJSON(d), tt.path)
			}
		})
	}
}

// TestMaxConcurrencyObserved runs more independent nodes than maxConcurrency
// allows and counts how many run at once, across top-level nodes, map
// iterations and child workflows alike.
func TestMaxConcurrencyObserved(t *testing.T) {
	defer goleak.VerifyNone(t)
	var flat []string
	for _, id := range strings.Split("a b c d e f g h i j", " ") {
		flat = append(flat, `{"id":"`+id+`","type":"probe","with":{"sleepMs":40}}`)
	}
	tests := []struct {
		name string
		wf   string
		max  int
	}{
		{"independent nodes", `{"nodes":[` + strings.Join(flat, ",") + `]}`, 3},
		{"one at a time", `{"nodes":[` + strings.Join(flat, ",") + `]}`, 1},
		{"map iterations and siblings share the bound", `{"nodes":[` + strings.Join(flat[:4], ",") + `,
			{"id":"m","type":"map","with":{"items":"${{ 1..6 }}","concurrency":6,"nodes":[{"id":"p","type":"probe","with":{"sleepMs":40}}]}}]}`, 4},
		{"child workflows share the bound", `{"nodes":[` + strings.Join(flat[:2], ",") + `,
			{"id":"m","type":"map","with":{"items":"${{ 1..4 }}","nodes":[{"id":"c","type":"workflow","with":{"workflow":"pair"}}]}}]}`, 5},
	}
	child := `{"id":"pair","nodes":[{"id":"x","type":"probe","with":{"sleepMs":40}},{"id":"y","type":"probe","with":{"sleepMs":40}}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, probe := wtEngine(func(l *Limits) { l.MaxConcurrency = tt.max })
			s := wtRun(t, nil, e, wtReq(t, tt.wf, "", child))
			s.result(t)
			if got := probe.peakRunning(); got != tt.max {
				t.Errorf("at most %d nodes ran at once, want %d", got, tt.max)
			}
		})
	}
}

// TestTraceTruncation checks maxEventBytes: a traced input or output beyond
// it is replaced by {"$truncated":true,"bytes":N,"preview":"..."}, the
// marker fits the limit, and the preview is the start of the real JSON.
func TestTraceTruncation(t *testing.T) {
	defer goleak.VerifyNone(t)
	const limit = 300
	tests := []struct {
		name      string
		value     string // with.value, as JSON
		trace     bool
		truncated bool
	}{
		{"small values are traced whole", `"hello"`, true, false},
		{"ascii over the limit", `"` + strings.Repeat("abcdef", 100) + `"`, true, true},
		{"escaping grows the preview", `"` + strings.Repeat(`<\"&`, 200) + `"`, true, true},
		{"escaping doubles the preview", `"` + strings.Repeat(`\"`, 300) + `"`, true, true},
		{"multi-byte characters are not split", `"` + strings.Repeat("é漢", 200) + `"`, true, true},
		{"an object over the limit", `{"k":[` + strings.Repeat(`{"a":1},`, 80) + `1]}`, true, true},
		{"no trace, no input or output", `"` + strings.Repeat("abcdef", 100) + `"`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) { l.MaxEventBytes = limit })
			req := wtReq(t, `{"nodes":[{"id":"n","type":"set","with":{"value":`+tt.value+`}}]}`, "")
			req.Trace = tt.trace
			s := wtRun(t, nil, e, req)
			s.result(t)
			var want any
			if err := json.Unmarshal([]byte(tt.value), &want); err != nil {
				t.Fatal(err)
			}
			started, completed := s.started("n"), s.completed("n")
			if len(started) != 1 || len(completed) != 1 {
				t.Fatalf("started %d, completed %d, want 1 each", len(started), len(completed))
			}
			in, out := started[0].Input, completed[0].Output
			if !tt.trace {
				if in != nil || out != nil {
					t.Errorf("untraced events carry input %s output %s", in, out)
				}
				return
			}
			for _, c := range []struct {
				what string
				got  json.RawMessage
				full any
			}{{"input", in, map[string]any{"value": want}}, {"output", out, want}} {
				// As the events write it: HTML escaping off.
				var fb bytes.Buffer
				enc := json.NewEncoder(&fb)
				enc.SetEscapeHTML(false)
				_ = enc.Encode(c.full)
				fullJSON := bytes.TrimSuffix(fb.Bytes(), []byte("\n"))
				if !tt.truncated {
					wtSameJSON(t, c.what, c.got, string(fullJSON))
					continue
				}
				if len(c.got) > limit {
					t.Errorf("%s marker is %d bytes, over maxEventBytes %d", c.what, len(c.got), limit)
				}
				var m map[string]any
				if err := json.Unmarshal(c.got, &m); err != nil {
					t.Fatalf("%s marker %s: %v", c.what, c.got, err)
				}
				preview, _ := m["preview"].(string)
				if m["$truncated"] != true || m["bytes"] != float64(len(fullJSON)) || len(m) != 3 {
					t.Errorf("%s marker %s, want {$truncated:true, bytes:%d, preview}", c.what, c.got, len(fullJSON))
				}
				if preview == "" || !strings.HasPrefix(string(fullJSON), preview) || !utf8.ValidString(preview) {
					t.Errorf("%s preview %q is not a non-empty prefix of %s", c.what, preview, fullJSON)
				}
			}
			// The result itself is never truncated.
			wtSameJSON(t, "result", s.result(t).Output, `{"n":`+tt.value+`}`)
		})
	}
}

// An engine built with no limits runs a workflow (it used to refuse
// every one as over maxNodes (0)).
func TestLimitsZeroRuns(t *testing.T) {
	e := New(Limits{})
	req := wtReq(t, `{"nodes":[{"id":"n","type":"set","with":{"value":1}}]}`, "")
	wtSameJSON(t, "result", wtRun(t, nil, e, req).result(t).Output, `{"n":1}`)
}
