package engine

import (
	"github.com/runnerd/lambda-runner/protocol"

	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestRetryAttempts checks how many attempts a node gets and what its events
// say about them: the attempt number on every event, retrying:true on every
// failure but the last.
func TestRetryAttempts(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name     string
		node     string        // the node "n", as written
		attempts int           // node.started events for n
		retrying []bool        // node.failed events for n, in order
		ok       bool          // the execution completes
		code     protocol.Code // the code of the last failure
	}{{
		name:     "no retry policy: one attempt",
		node:     `{"id":"n","type":"probe","with":{"failFirst":5}}`,
		attempts: 1, retrying: []bool{false}, code: "FAILED",
	}, {
		name:     "succeeds on the third of three attempts",
		node:     `{"id":"n","type":"probe","retry":{"maxAttempts":3,"backoffMs":1},"with":{"failFirst":2,"value":"ok"}}`,
		attempts: 3, retrying: []bool{true, true}, ok: true,
	}, {
		name:     "fails every attempt",
		node:     `{"id":"n","type":"probe","retry":{"maxAttempts":4,"backoffMs":1},"with":{"failFirst":9,"code":"TOOL_ERROR"}}`,
		attempts: 4, retrying: []bool{true, true, true, false}, code: "TOOL_ERROR",
	}, {
		name:     "timeouts are retried",
		node:     `{"id":"n","type":"probe","timeoutMs":20,"retry":{"maxAttempts":2,"backoffMs":1},"with":{"block":true}}`,
		attempts: 2, retrying: []bool{true, false}, code: "TIMEOUT",
	}, {
		name:     "a fail node with a retry policy is retried",
		node:     `{"id":"n","type":"fail","retry":{"maxAttempts":2,"backoffMs":1}}`,
		attempts: 2, retrying: []bool{true, false}, code: "FAILED",
	}, {
		name:     "expression errors are not retried",
		node:     `{"id":"n","type":"set","retry":{"maxAttempts":3,"backoffMs":1},"with":{"value":"${{ input.a.b }}"}}`,
		attempts: 1, retrying: []bool{false}, code: "EXPRESSION_ERROR",
	}, {
		name:     "limit errors are not retried",
		node:     `{"id":"n","type":"probe","retry":{"maxAttempts":3,"backoffMs":1},"with":{"failFirst":9,"code":"LIMIT_EXCEEDED"}}`,
		attempts: 1, retrying: []bool{false}, code: "LIMIT_EXCEEDED",
	}, {
		name:     "permission denials are not retried",
		node:     `{"id":"n","type":"probe","retry":{"maxAttempts":3,"backoffMs":1},"with":{"failFirst":9,"code":"PERMISSION_DENIED"}}`,
		attempts: 1, retrying: []bool{false}, code: "PERMISSION_DENIED",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(nil)
			s := wtRun(t, nil, e, wtReq(t, `{"nodes":[`+tt.node+`]}`, `{}`))
			started := s.started("n")
			if len(started) != tt.attempts {
				t.Fatalf("%d node.started, want %d", len(started), tt.attempts)
			}
			for i, ev := range started {
				if ev.Attempt != i+1 || ev.NodeType == "" {
					t.Errorf("node.started #%d: attempt %d type %q, want attempt %d", i, ev.Attempt, ev.NodeType, i+1)
				}
			}
			failed := s.failed("n")
			if len(failed) != len(tt.retrying) {
				t.Fatalf("node.failed %s, want %d of them", wtJSON(failed), len(tt.retrying))
			}
			for i, ev := range failed {
				if ev.Attempt != i+1 || ev.Retrying != tt.retrying[i] {
					t.Errorf("node.failed #%d: attempt %d retrying %v, want attempt %d retrying %v", i, ev.Attempt, ev.Retrying, i+1, tt.retrying[i])
				}
			}
			if tt.ok {
				done := s.completed("n")
				if len(done) != 1 || done[0].Attempt != tt.attempts {
					t.Errorf("node.completed %s, want one for attempt %d", wtJSON(done), tt.attempts)
				}
				s.result(t)
				return
			}
			if got := failed[len(failed)-1].Error.Code; got != tt.code {
				t.Errorf("last failure code %s, want %s", got, tt.code)
			}
			if ee := s.execError(t); ee.NodeID != "n" || !strings.Contains(ee.Message, string(tt.code)) {
				t.Errorf("terminal error %s, want it to name n and %s", wtJSON(ee), tt.code)
			}
		})
	}
}

// TestRetryBackoff measures the gaps between attempts (from the end of one to
// the start of the next) with a probe that records timestamps. Jitter draws
// each wait from [d/2, d]; the bounds are generous on the high side because
// timers run late on a loaded machine, never early.
func TestRetryBackoff(t *testing.T) {
	defer goleak.VerifyNone(t)
	const slack = 150 * time.Millisecond
	tests := []struct {
		name  string
		retry string
		waits []time.Duration // the nominal d of each wait
		grow  float64         // each gap ≥ previous × grow × 0.5 (0: no check)
	}{{
		name:  "grows by factor",
		retry: `{"maxAttempts":4,"backoffMs":40,"factor":3,"maxBackoffMs":10000}`,
		waits: []time.Duration{40 * time.Millisecond, 120 * time.Millisecond, 360 * time.Millisecond},
		grow:  3,
	}, {
		name:  "default factor is 2",
		retry: `{"maxAttempts":3,"backoffMs":60}`,
		waits: []time.Duration{60 * time.Millisecond, 120 * time.Millisecond},
		grow:  2,
	}, {
		name:  "capped by maxBackoffMs",
		retry: `{"maxAttempts":4,"backoffMs":50,"factor":10,"maxBackoffMs":80}`,
		waits: []time.Duration{50 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond},
	}, {
		// Round 21: the product overflowed time.Duration to a negative
		// wait, and every later attempt ran at once.
		name:  "a factor past what a duration holds is capped, not overflowed",
		retry: `{"maxAttempts":4,"backoffMs":50,"factor":1e10,"maxBackoffMs":80}`,
		waits: []time.Duration{50 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond},
	}, {
		name:  "a factor of 1e300 likewise",
		retry: `{"maxAttempts":3,"backoffMs":60,"factor":1e300,"maxBackoffMs":90}`,
		waits: []time.Duration{60 * time.Millisecond, 90 * time.Millisecond},
	}, {
		name:  "maxBackoffMs caps the first wait too",
		retry: `{"maxAttempts":2,"backoffMs":5000,"maxBackoffMs":60}`,
		waits: []time.Duration{60 * time.Millisecond},
	}, {
		name:  "explicit zero backoff retries at once",
		retry: `{"maxAttempts":3,"backoffMs":0}`,
		waits: []time.Duration{0, 0},
	}, {
		name:  "default backoff is 200ms",
		retry: `{"maxAttempts":2}`,
		waits: []time.Duration{200 * time.Millisecond},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, probe := wtEngine(nil)
			wf := `{"nodes":[{"id":"n","type":"probe","retry":` + tt.retry + `,"with":{"failFirst":99}}]}`
			wtRun(t, nil, e, wtReq(t, wf, ""))
			starts, ends := probe.startTimes("n"), probe.endTimes("n")
			if len(starts) != len(tt.waits)+1 || len(ends) != len(starts) {
				t.Fatalf("%d attempts (%d ended), want %d", len(starts), len(ends), len(tt.waits)+1)
			}
			var prev time.Duration
			for i, d := range tt.waits {
				gap := starts[i+1].Sub(ends[i])
				if gap < d/2 || gap > d+slack {
					t.Errorf("wait %d: %v, want within [%v, %v]", i+1, gap, d/2, d+slack)
				}
				if tt.grow > 0 && i > 0 && float64(gap) < float64(prev)*tt.grow*0.5 {
					t.Errorf("wait %d: %v after %v, want growth by factor %v (at least ×%v)", i+1, gap, prev, tt.grow, tt.grow*0.5)
				}
				prev = gap
			}
		})
	}
}

// TestJitter checks the spread of one wait: within [d/2, d], and not always
// the same.
func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 7, time.Millisecond, 3 * time.Second} {
		seen := map[time.Duration]bool{}
		for range 200 {
			j := jitter(d)
			if j < d/2 || j > d {
				t.Fatalf("jitter(%v) = %v, want within [%v, %v]", d, j, d/2, d)
			}
			seen[j] = true
		}
		if d >= time.Millisecond && len(seen) < 10 {
			t.Errorf("jitter(%v) took %d distinct values in 200 draws, want a spread", d, len(seen))
		}
	}
}

// TestTimeouts checks timeoutMs: the attempt's context ends and the node
// fails with TIMEOUT, inside sub-graphs too.
func TestTimeouts(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name   string
		wf     string
		failed []string // "id=CODE"
		nodeID string
	}{{
		name:   "a node over its timeout",
		wf:     `{"nodes":[{"id":"slow","type":"probe","timeoutMs":30,"with":{"block":true}}]}`,
		failed: []string{"slow=TIMEOUT"},
		nodeID: "slow",
	}, {
		name:   "a node under its timeout completes",
		wf:     `{"nodes":[{"id":"quick","type":"probe","timeoutMs":5000,"with":{"sleepMs":5,"value":1}}]}`,
		nodeID: "",
	}, {
		name: "a map's timeout ends its iterations as a timeout",
		wf: `{"nodes":[{"id":"each","type":"map","timeoutMs":40,"with":{"items":[1,2],"nodes":[
			{"id":"slow","type":"probe","with":{"block":true}}]}}]}`,
		failed: []string{"each[0].slow=TIMEOUT", "each[1].slow=TIMEOUT", "each=TIMEOUT"},
		nodeID: "each[0].slow|each[1].slow",
	}, {
		name:   "a child workflow's timeout",
		wf:     `{"nodes":[{"id":"call","type":"workflow","timeoutMs":40,"with":{"workflow":"slowchild"}}]}`,
		failed: []string{"call.slow=TIMEOUT", "call=TIMEOUT"},
		nodeID: "call.slow",
	}, {
		name: "an inner timeout inside a map",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"nodes":[
			{"id":"slow","type":"probe","timeoutMs":30,"with":{"block":true}}]}}]}`,
		failed: []string{"each[0].slow=TIMEOUT", "each=TIMEOUT"},
		nodeID: "each[0].slow",
	}}
	child := `{"id":"slowchild","nodes":[{"id":"slow","type":"probe","with":{"block":true}}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(nil)
			began := time.Now()
			s := wtRun(t, nil, e, wtReq(t, tt.wf, "", child))
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("execution took %v: the timeout did not end it", took)
			}
			if tt.nodeID == "" {
				s.result(t)
				return
			}
			ee := s.execError(t)
			if !strings.Contains("|"+tt.nodeID+"|", "|"+ee.NodeID+"|") || !strings.Contains(ee.Message, "TIMEOUT") {
				t.Errorf("terminal error %s, want nodeId in %q and TIMEOUT", wtJSON(ee), tt.nodeID)
			}
			for _, f := range tt.failed {
				id, code, _ := strings.Cut(f, "=")
				evs := s.failed(id)
				if len(evs) == 0 || evs[len(evs)-1].Error.Code != protocol.Code(code) {
					t.Errorf("node.failed for %s: %s, want code %s", id, wtJSON(evs), code)
				}
			}
		})
	}
}

// TestFailureCancelsSiblings checks that a failure cancels what still runs:
// a blocked sibling sees its context end, is reported CANCELLED, and the
// execution ends at once instead of waiting for it.
func TestFailureCancelsSiblings(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name    string
		wf      string
		blocked []string // probe ids that must have seen ctx.Done
		nodeID  string
		backoff string // a node cancelled while waiting to retry
	}{{
		name: "top-level siblings",
		wf: `{"nodes":[{"id":"a","type":"probe","with":{"block":true}},{"id":"b","type":"probe","with":{"block":true}},
			{"id":"boom","type":"probe","with":{"sleepMs":30}},{"id":"fail","type":"fail","needs":["boom"]}]}`,
		blocked: []string{"a", "b"},
		nodeID:  "fail",
	}, {
		name: "other map iterations",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[0,1,2],"nodes":[
			{"id":"p","type":"probe","with":{"block":"${{ index != 1 }}","sleepMs":30}},
			{"id":"f","type":"fail","needs":["p"]}]}}]}`,
		blocked: []string{"each[0].p", "each[2].p"},
		nodeID:  "each[1].f",
	}, {
		name: "a sibling of a map",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[0,1],"nodes":[{"id":"p","type":"probe","with":{"block":true}}]}},
			{"id":"f","type":"probe","with":{"sleepMs":30,"failFirst":0}},{"id":"g","type":"fail","needs":["f"]}]}`,
		blocked: []string{"each[0].p", "each[1].p"},
		nodeID:  "g",
	}, {
		name: "a node inside a child workflow",
		wf: `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"blocker"}},
			{"id":"w","type":"probe","with":{"sleepMs":30}},{"id":"f","type":"fail","needs":["w"]}]}`,
		blocked: []string{"call.p"},
		nodeID:  "f",
	}, {
		name: "a node in backoff between attempts",
		wf: `{"nodes":[{"id":"r","type":"probe","retry":{"maxAttempts":5,"backoffMs":10000,"maxBackoffMs":10000},"with":{"failFirst":9}},
			{"id":"w","type":"probe","with":{"sleepMs":30}},{"id":"f","type":"fail","needs":["w"]}]}`,
		nodeID:  "f",
		backoff: "r",
	}}
	child := `{"id":"blocker","nodes":[{"id":"p","type":"probe","with":{"block":true}}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, probe := wtEngine(nil)
			began := time.Now()
			s := wtRun(t, nil, e, wtReq(t, tt.wf, "", child))
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("execution took %v: siblings were not cancelled", took)
			}
			if ee := s.execError(t); ee.NodeID != tt.nodeID {
				t.Errorf("terminal error %s, want it to name %s", wtJSON(ee), tt.nodeID)
			}
			for _, id := range tt.blocked {
				if !probe.sawCancel(id) {
					t.Errorf("%s did not see its context end", id)
				}
				evs := s.failed(id)
				if len(evs) != 1 || evs[0].Error.Code != "CANCELLED" || evs[0].Retrying {
					t.Errorf("node.failed for %s: %s, want one CANCELLED, not retrying", id, wtJSON(evs))
				}
			}
			if tt.backoff != "" {
				// The first failure announced a retry; the cancellation
				// must withdraw it, or the node would look pending forever.
				evs := s.failed(tt.backoff)
				if len(evs) != 2 || !evs[0].Retrying || evs[1].Retrying || evs[1].Error.Code != "CANCELLED" || evs[1].Attempt != 1 {
					t.Errorf("node.failed for %s: %s, want retrying then CANCELLED not retrying", tt.backoff, wtJSON(evs))
				}
			}
		})
	}
}
