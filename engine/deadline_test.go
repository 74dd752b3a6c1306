package engine

import (
	"github.com/runnerd/lambda-runner/protocol"

	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestDeadline runs executions under a context deadline a few hundred
// milliseconds away, as a Lambda invocation's. The terminal event must be
// written before that deadline, inside the reserve, and say "deadline
// exceeded": never a silent timeout.
func TestDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	const (
		budget  = 400 * time.Millisecond
		reserve = 100 * time.Millisecond
	)
	tests := []struct {
		name    string
		wf      string
		ctxNone bool          // no context deadline: Limits.MaxDuration applies
		nodeID  string        // the node the terminal error names
		message string        // the terminal error's message
		failed  []string      // "id=CODE" on the last node.failed of id
		within  time.Duration // the terminal event comes at most this long after Run began
		after   time.Duration // and not before this
	}{{
		name:    "a slow node is stopped at the execution deadline",
		wf:      `{"nodes":[{"id":"slow","type":"probe","with":{"block":true}}]}`,
		nodeID:  "slow",
		message: "DEADLINE_EXCEEDED: deadline exceeded",
		failed:  []string{"slow=DEADLINE_EXCEEDED"},
		after:   budget - reserve,
		within:  budget,
	}, {
		name:    "a node timeout past the deadline is clipped to it",
		wf:      `{"nodes":[{"id":"slow","type":"probe","timeoutMs":60000,"with":{"sleepMs":60000}}]}`,
		nodeID:  "slow",
		message: "DEADLINE_EXCEEDED: deadline exceeded",
		failed:  []string{"slow=DEADLINE_EXCEEDED"},
		after:   budget - reserve,
		within:  budget,
	}, {
		name:    "a retry whose backoff would pass the deadline does not wait",
		wf:      `{"nodes":[{"id":"flaky","type":"probe","retry":{"maxAttempts":3,"backoffMs":5000,"maxBackoffMs":5000},"with":{"failFirst":9}}]}`,
		nodeID:  "flaky",
		message: "node flaky failed: FAILED: probe attempt 1 fails",
		failed:  []string{"flaky=FAILED"},
		within:  budget - reserve - 50*time.Millisecond,
	}, {
		name: "slow nodes inside a map",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"nodes":[
			{"id":"slow","type":"probe","with":{"block":true}}]}}]}`,
		nodeID:  "each[0].slow",
		message: "DEADLINE_EXCEEDED: deadline exceeded",
		failed:  []string{"each[0].slow=DEADLINE_EXCEEDED", "each=DEADLINE_EXCEEDED"},
		after:   budget - reserve,
		within:  budget,
	}, {
		name:    "slow nodes inside a child workflow",
		wf:      `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"slowchild"}}]}`,
		nodeID:  "call.slow",
		message: "DEADLINE_EXCEEDED: deadline exceeded",
		failed:  []string{"call.slow=DEADLINE_EXCEEDED", "call=DEADLINE_EXCEEDED"},
		after:   budget - reserve,
		within:  budget,
	}, {
		name:    "no context deadline: MaxDuration less the reserve",
		wf:      `{"nodes":[{"id":"slow","type":"probe","with":{"block":true}}]}`,
		ctxNone: true,
		nodeID:  "slow",
		message: "DEADLINE_EXCEEDED: deadline exceeded",
		after:   budget - reserve,
		within:  budget,
	}}
	child := `{"id":"slowchild","nodes":[{"id":"slow","type":"probe","with":{"block":true}}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) {
				l.Reserve = reserve
				l.MaxDuration = budget
			})
			x, err := e.Prepare(wtReq(t, tt.wf, "", child))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			began := time.Now()
			deadline := began.Add(budget)
			if !tt.ctxNone {
				c, cancel := context.WithDeadline(ctx, deadline)
				defer cancel()
				ctx = c
			}
			s := &wtSink{}
			x.Run(ctx, s)
			ee := s.execError(t)
			if ee.NodeID != tt.nodeID || ee.Message != tt.message {
				t.Errorf("terminal error %s, want nodeId %q message %q", wtJSON(ee), tt.nodeID, tt.message)
			}
			at := s.finishAt.Sub(began)
			if !s.finishAt.Before(deadline) || at > tt.within {
				t.Errorf("terminal event %v after start, want before the deadline (%v) and within %v", at, budget, tt.within)
			}
			if at < tt.after {
				t.Errorf("terminal event %v after start, want no earlier than %v", at, tt.after)
			}
			for _, f := range tt.failed {
				id, code, _ := strings.Cut(f, "=")
				evs := s.failed(id)
				if len(evs) == 0 || evs[len(evs)-1].Error.Code != protocol.Code(code) || evs[len(evs)-1].Retrying {
					t.Errorf("node.failed for %s: %s, want a last one with %s, not retrying", id, wtJSON(evs), code)
				}
			}
		})
	}
}

// TestDeadlineBackoffThatFits checks the other side of the clipping: a wait
// that ends before the deadline is taken.
func TestDeadlineBackoffThatFits(t *testing.T) {
	defer goleak.VerifyNone(t)
	e, probe := wtEngine(func(l *Limits) { l.Reserve = 100 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	wf := `{"nodes":[{"id":"flaky","type":"probe","retry":{"maxAttempts":3,"backoffMs":20},"with":{"failFirst":2,"value":"ok"}}]}`
	s := wtRun(t, ctx, e, wtReq(t, wf, ""))
	wtSameJSON(t, "output", s.result(t).Output, `{"flaky":"ok"}`)
	if n := len(probe.startTimes("flaky")); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

// TestDeadlineAlreadyPassed covers an invocation that has less time left
// than the reserve: nothing runs and the terminal error comes at once.
func TestDeadlineAlreadyPassed(t *testing.T) {
	defer goleak.VerifyNone(t)
	e, probe := wtEngine(func(l *Limits) { l.Reserve = 500 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	s := wtRun(t, ctx, e, wtReq(t, `{"nodes":[{"id":"a","type":"probe","with":{"value":1}}]}`, ""))
	if ee := s.execError(t); ee.Message != "DEADLINE_EXCEEDED: deadline exceeded" || ee.NodeID != "" {
		t.Errorf("terminal error %s, want \"deadline exceeded\" naming no node", wtJSON(ee))
	}
	if took := time.Since(began); took > 100*time.Millisecond {
		t.Errorf("took %v, want an immediate end", took)
	}
	if n := len(probe.startTimes("a")); n != 0 {
		t.Errorf("node ran %d times past the deadline", n)
	}
}

// TestCancelledByCaller covers a client that goes away: the context is
// cancelled, running nodes see it, and Run returns with nothing left behind.
func TestCancelledByCaller(t *testing.T) {
	defer goleak.VerifyNone(t)
	e, probe := wtEngine(nil)
	wf := `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2,3],"nodes":[{"id":"p","type":"probe","with":{"block":true}}]}},
		{"id":"q","type":"probe","with":{"block":true}}]}`
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	s := wtRun(t, ctx, e, wtReq(t, wf, ""))
	ee := s.execError(t)
	if ee.Message == "DEADLINE_EXCEEDED: deadline exceeded" {
		t.Errorf("terminal error %s: a cancellation is not a deadline", wtJSON(ee))
	}
	for _, id := range []string{"each[0].p", "each[1].p", "each[2].p", "q"} {
		if !probe.sawCancel(id) {
			t.Errorf("%s did not see the cancellation", id)
		}
		if evs := s.failed(id); len(evs) != 1 || evs[0].Error.Code != "CANCELLED" {
			t.Errorf("node.failed for %s: %s, want CANCELLED", id, wtJSON(evs))
		}
	}
}
