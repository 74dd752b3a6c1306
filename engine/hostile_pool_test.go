package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/protocol"
)

// The sandbox pool is shared by every execution of a runner. An author
// with a valid token controls how many code nodes run at once, for how
// long, and what bodies are checked before acceptance; none of it may make
// another request's code node time out, another request's check fail with
// a 400 that blames its author, or a wait outlast the deadline.

// spinners is a workflow of n parallel code nodes that never end.
func spinners(n int) string {
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"id":"spin%d","type":"code","with":{"code":"while (true) {}"}}`, i)
	}
	return codeDoc(strings.Join(nodes, ","))
}

// One execution spinning more code nodes than there are workers holds at
// most its share of them: another request's body is checked (the check has
// a worker of its own) and its code node runs to completion within a
// timeoutMs shorter than the spinners' run, while the spinners go on.
func TestHostileOneExecutionCannotStarveAnother(t *testing.T) {
	e, p := codeEngine(t, Limits{})
	if p.Share() >= p.Options.Workers {
		t.Fatalf("share %d of %d workers leaves none to another execution", p.Share(), p.Options.Workers)
	}
	// A map's iterations and a child workflow's nodes are the same
	// execution's, sharing its part of the pool.
	inMap := `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2,3,4,5,6],"nodes":[{"id":"spin","type":"code","with":{"code":"while (true) {}"}}]}}]}`
	for n, doc := range map[int]string{4: spinners(4), 8: spinners(8), 6: inMap} {
		t.Run(fmt.Sprintf("%d spinners", n), func(t *testing.T) {
			hog := prepareReq(t, e, reqBody(doc, ""))
			ctx, cancel := context.WithCancel(context.Background())
			hogSink := &recSink{}
			hogDone := make(chan struct{})
			go func() {
				defer close(hogDone)
				hog.Run(ctx, hogSink)
			}()
			defer func() {
				cancel()
				<-hogDone
				hogSink.terminal(t)
			}()
			// The hog holds what it may.
			for deadline := time.Now().Add(20 * time.Second); countStarted(hogSink) < 1; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the spinners never started")
				}
			}
			time.Sleep(300 * time.Millisecond)
			// A body never seen before: a check in a worker, not the memory
			// of one.
			body := reqBody(codeDoc(fmt.Sprintf(`{"id":"c","type":"code","timeoutMs":10000,"with":{"input":2,"code":"// %d %d\nreturn input * 21"}}`, n, time.Now().UnixNano())), "")
			x, err := e.PrepareBody([]byte(body))
			if err != nil {
				t.Fatalf("another request's body was refused while one execution spins: %v", err)
			}
			s := &recSink{}
			x.Run(context.Background(), s)
			wantOutput(t, s.result(t), `{"c":42}`)
			select {
			case <-hogDone:
				t.Fatal("the spinners ended before they were cancelled")
			default:
			}
		})
	}
}

// countStarted counts the node.started events a sink holds.
func countStarted(s *recSink) int {
	n := 0
	for _, ev := range s.all() {
		if _, ok := ev.(*protocol.NodeStarted); ok {
			n++
		}
	}
	return n
}

// A code node's timeoutMs counts from when a worker starts on it: parallel
// nodes that each run well inside their timeout complete, however long
// they wait their turn for a worker (here the execution's share is one
// worker, and the last node waits for seven before it), and a traced
// event says how long each waited (queuedMs).
func TestCodeNodeTimeoutExcludesTheQueue(t *testing.T) {
	e, p := codeEngine(t, Limits{})
	const n, runMs, timeoutMs = 8, 300, 1500
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"id":"n%d","type":"code","timeoutMs":%d,"with":{"code":"const t = Date.now(); while (Date.now() < t + %d) {} return %d"}}`, i, timeoutMs, runMs, i)
	}
	s, _ := runBody(t, e, `{"version":1,"trace":true,"workflow":`+codeDoc(strings.Join(nodes, ","))+`}`)
	s.result(t)
	var queued []int64
	for _, ev := range s.all() {
		if c, ok := ev.(*protocol.NodeCompleted); ok {
			queued = append(queued, c.QueuedMs)
		}
	}
	if len(queued) != n {
		t.Fatalf("%d nodes completed, want %d", len(queued), n)
	}
	longest := int64(0)
	for _, q := range queued {
		longest = max(longest, q)
	}
	// With a share of one worker the last waits for all the others.
	if want := int64((n/p.Share() - 1) * runMs); longest < want {
		t.Errorf("queuedMs %v: the longest wait is %d ms, want at least %d", queued, longest, want)
	}
}

// A wait for a worker ends at the execution's deadline, and the terminal
// event is written in the reserve: the node that never got a worker fails
// DEADLINE_EXCEEDED like the one that spins.
func TestHostileWaitForWorkerEndsAtDeadline(t *testing.T) {
	e := New(Limits{Reserve: 200 * time.Millisecond})
	p := &sandbox.Pool{Options: sandbox.Options{Path: os.Args[0], Workers: 1}}
	t.Cleanup(p.Close)
	e.Services.Code = p
	x := prepareReq(t, e, reqBody(spinners(3), ""))
	const budget = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	s := &recSink{}
	start := time.Now()
	x.Run(ctx, s)
	took := time.Since(start)
	f := s.failure(t)
	if !strings.Contains(f.Error.Message, "deadline") {
		t.Errorf("terminal error %q, want the deadline", f.Error.Message)
	}
	failed := 0
	for _, ev := range s.all() {
		if nf, ok := ev.(*protocol.NodeFailed); ok {
			failed++
			if nf.Error.Code != protocol.CodeDeadlineExceeded {
				t.Errorf("%s failed %s, want %s", nf.NodeID, nf.Error.Code, protocol.CodeDeadlineExceeded)
			}
		}
	}
	if failed != 3 {
		t.Errorf("%d nodes failed, want the 3 (those waiting for a worker too)", failed)
	}
	if took > budget+500*time.Millisecond {
		t.Errorf("terminal event after %v, deadline %v", took, budget)
	}
}

// Bodies whose nesting a regular expression literal hides from a naive
// filter ("}" inside /}/ closing a block the parser never sees closed) are
// refused before any parse, each naming its field, at once; no worker is
// started for them.
func TestHostileRegexHiddenNestingBodies(t *testing.T) {
	e, p := codeEngine(t, Limits{})
	started := p.Started()
	for _, unit := range []string{"a:{/}/;", "a:{if(a)/}/;", "a:{x=\u00a0/}/;", "a:{/[/}]/;"} {
		code, _ := json.Marshal(strings.Repeat(unit, 1200))
		nodes := make([]string, 48)
		for i := range nodes {
			nodes[i] = fmt.Sprintf(`{"id":"c%d","type":"code","with":{"code":%s}}`, i, code)
		}
		start := time.Now()
		_, err := e.PrepareBody([]byte(reqBody(codeDoc(strings.Join(nodes, ",")), "")))
		took := time.Since(start)
		var inv *protocol.Invalid
		if !errors.As(err, &inv) || len(inv.Details) != 48 {
			t.Fatalf("%q: PrepareBody = %v, want 48 problems", unit, err)
		}
		for i, d := range inv.Details {
			if want := fmt.Sprintf("workflow.nodes[%d].with.code", i); d.Path != want || !strings.Contains(d.Message, "nest deeper") {
				t.Errorf("%q: detail %d = %+v, want nesting at %s", unit, i, d, want)
			}
		}
		t.Logf("%q x 1,200, 48 bodies: refused in %v", unit, took)
	}
	if p.Started() != started {
		t.Error("a worker was started for bodies the filter refuses")
	}
}

// A request's checks together have a budget: a sandbox that cannot answer
// in time (here, a worker that never does) makes the request ErrBusy (503
// and Retry-After), never a problem of the author's body, by the end of
// the budget whatever the number of bodies.
func TestHostileCheckBudget(t *testing.T) {
	silent := t.TempDir() + "/silent"
	if err := os.WriteFile(silent, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := Limits{MaxDuration: 2 * time.Second} // a budget of 500 ms
	e := New(l)
	p := &sandbox.Pool{Options: sandbox.Options{Path: silent, Workers: 2}}
	t.Cleanup(p.Close)
	e.Services.Code = p
	nodes := make([]string, 24)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"id":"c%d","type":"code","with":{"code":"return %d"}}`, i, i)
	}
	start := time.Now()
	_, err := e.PrepareBody([]byte(reqBody(codeDoc(strings.Join(nodes, ",")), "")))
	took := time.Since(start)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "workflow.nodes[0].with.code") {
		t.Errorf("PrepareBody = %v, want ErrBusy naming the first code", err)
	}
	if budget := codeCheckBudget(l.WithDefaults()); took > budget+time.Second {
		t.Errorf("answered after %v, budget %v", took, budget)
	}
	// A problem of the request's own is still reported as one.
	_, err = e.PrepareBody([]byte(reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":"return 1"}},{"id":"c","type":"nope"}`), "")))
	var inv *protocol.Invalid
	if !errors.As(err, &inv) {
		t.Errorf("PrepareBody = %v, want the request's own problems", err)
	}
	// Validate says what could not be checked, as a warning.
	problems := e.Validate([]byte(reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":"return 1"}}`), "")))
	if len(problems) != 1 || !problems[0].Warning || !strings.Contains(problems[0].Message, "could not be checked") {
		t.Errorf("Validate = %+v, want one warning", problems)
	}
}

// A worker's reply is charged to the execution's memory budget as its
// frame announces it, before it is read: however the output cap allows
// it, a reply the budget cannot hold while it is decoded is refused
// unread, MEMORY_BUDGET_EXCEEDED naming the node, and the node outputs
// already held count. Under a budget that holds it, the same node
// completes.
func TestHostileCodeReplyCharged(t *testing.T) {
	const ret = `return 'x'.repeat(3 << 20)` // a 3 MiB string under a 4 MiB output cap
	tests := []struct {
		name   string
		budget int64
		nodes  string
		fails  bool
	}{
		{"reply over the budget", 4 << 20, `{"id":"c","type":"code","with":{"code":"` + ret + `"}}`, true},
		{"outputs held leave no room", 8 << 20,
			`{"id":"held","type":"code","with":{"code":"return 'y'.repeat(3 << 20)"}},{"id":"c","type":"code","needs":["held"],"with":{"code":"` + ret + `"}}`, true},
		{"within the budget", 32 << 20, `{"id":"c","type":"code","with":{"code":"` + ret + `"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := codeEngine(t, Limits{MemoryBudget: tt.budget, MaxOutputBytes: 4 << 20})
			s, _ := runBody(t, e, reqBody(codeDoc(tt.nodes), ""))
			f := s.nodeFailed("c")
			switch {
			case !tt.fails && f != nil:
				t.Fatalf("node c failed: %s %s", f.Error.Code, f.Error.Message)
			case !tt.fails:
				return
			case f == nil:
				t.Fatalf("a reply over the budget was read; events %v", s.all())
			case f.Error.Code != protocol.CodeMemoryBudgetExceeded || !strings.Contains(f.Error.Message, "return value"):
				t.Fatalf("node.failed %s: %q, want %s naming the return value", f.Error.Code, f.Error.Message, protocol.CodeMemoryBudgetExceeded)
			}
			t.Log(f.Error.Message)
		})
	}
}

// A reply within its bytes that would decode to far more (many small
// values) is refused OUTPUT_TOO_LARGE in words that say so, not as if its
// bytes were over the cap.
func TestHostileCodeReplyWeight(t *testing.T) {
	e, _ := codeEngine(t, Limits{MaxOutputBytes: 64 << 10, MaxCodeLogBytes: 1 << 10})
	s, _ := runBody(t, e, reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":"return Array.from({length: 21000}, () => ({}))"}}`), ""))
	f := s.nodeFailed("c")
	if f == nil || f.Error.Code != protocol.CodeOutputTooLarge || !strings.Contains(f.Error.Message, "once decoded") {
		t.Fatalf("node.failed %v, want %s saying the reply is too large once decoded", f, protocol.CodeOutputTooLarge)
	}
}
