package engine

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Issue 18, classes 7, 8 and 9: expression cost is work. Each payload
// costs little to write and much to evaluate; each must end in-band with
// LIMIT_EXCEEDED, or with TIMEOUT within the node's timeoutMs and 100 ms,
// the process's heap staying small while it runs (peak sampled, not the
// heap left after).

// heapPeak runs f while sampling the live heap every millisecond, and
// returns how far above its starting point the heap went.
func heapPeak(f func()) int64 {
	runtime.GC()
	base := int64(exprHeapBytes())
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if h := int64(exprHeapBytes()); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak.Load() - base
}

// costSlack widens a time bound under the race detector, which makes the
// evaluations themselves several times slower.
func costSlack(d time.Duration) time.Duration {
	if raceDetector {
		return 3 * d
	}
	return d
}

// nestedBrackets is a JSON text of depth nested arrays.
func nestedBrackets(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// costInput is an input with a long string and a long array.
func costInput(strBytes, items int) string {
	a := make([]int, items)
	// t has s's bytes in a string of its own, so that comparing them
	// reads both whole.
	b, _ := json.Marshal(map[string]any{"s": strings.Repeat("ab", strBytes/2), "t": strings.Repeat("ab", strBytes/2),
		"a": a, "n": nestedBrackets(10_000), "o": map[string]any{"k": 1}})
	return string(b)
}

func TestHostileExpressionCost(t *testing.T) {
	input := costInput(400_000, 400_000)
	// A budget's LIMIT_EXCEEDED is only reported before the node's
	// one-second timeout (after it, the node fails TIMEOUT, which the
	// case refuses); the run's wall bound, reading the 4 MB input
	// included, allows for a loaded machine (1.2 s under race in CI).
	budgetWithin := time.Second + costSlack(500*time.Millisecond)
	unbounded := func(l *Limits) { l.MaxExprSteps = -1 }
	budget1M := func(l *Limits) { l.MaxExprSteps = 1_000_000 }
	// A quarter of it where each step scans the 400,000 items: a million
	// of those took 0.9 s under the race detector, next to the timeout.
	budget250K := func(l *Limits) { l.MaxExprSteps = 250_000 }
	tests := []struct {
		name   string
		value  string // the set node's with.value
		limits func(*Limits)
		code   protocol.Code
		within time.Duration
	}{
		// Class 7: toJSON indents, two spaces a level: 20 KB of brackets
		// is 200 MB of JSON.
		{name: "toJSON of deep brackets", value: `${{ toJSON(fromJSON(input.n)) }}`, code: protocol.CodeLimitExceeded, within: time.Second},
		{name: "toJSON of deep brackets in mixed text", value: `x${{ len(toJSON(fromJSON(input.n))) }}`, code: protocol.CodeLimitExceeded, within: time.Second},
		{name: "string of deep brackets, then toJSON", value: `${{ toJSON([fromJSON(input.n), fromJSON(input.n)]) }}`, code: protocol.CodeLimitExceeded, within: time.Second},
		// Class 8: a pattern is bounded and its compilation charged.
		{name: "five-megabyte pattern from the input", value: `${{ input.s matches (input.s + input.s + input.s + input.s + input.s + input.s + input.s) }}`, code: protocol.CodeLimitExceeded, within: time.Second},
		{name: "pattern with a large program", value: `${{ 'x' matches repeat('[a-z]{999}', 20) }}`, code: protocol.CodeLimitExceeded, within: time.Second},
		{name: "heavy pattern over a long input", value: `${{ input.s matches repeat('[a-z]{100}', 16) }}`, code: protocol.CodeLimitExceeded, within: time.Second},
		// Class 9: one step may be a large operation; each is charged, so
		// a timeout is seen between them.
		{name: "in over a large array per item", value: `${{ filter(input.a, {1 in input.a}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "in over a large array, budget", value: `${{ filter(input.a, {1 in input.a}) }}`, limits: budget250K, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "regex over a long string per item", value: `${{ filter(input.a, {input.s matches '(a|b)*c'}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "median per item", value: `${{ map(input.a, {median(input.a)}) }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "median of a smaller array per item", value: `${{ map(input.a, {median(input.a[:100000])}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "max per item", value: `${{ map(input.a, {max(input.a)}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "sort per item", value: `${{ map(input.a, {sort(input.a)[0]}) }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "deep equality per item", value: `${{ filter(input.a, {input.a == input.a}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "contains over a long string per item", value: `${{ filter(input.a, {input.s contains 'c'}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "indexOf over a long string per item", value: `${{ filter(input.a, {indexOf(input.s, 'c') > 0}) }}`, limits: unbounded, code: protocol.CodeTimeout, within: time.Second + costSlack(500*time.Millisecond)},
		{name: "uniq of a large array per item", value: `${{ filter(input.a, {len(uniq(input.a)) > 1}) }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		// Class 9, strings: comparing two long strings of one length, or
		// hashing one, reads its bytes; a step budget must see them
		// (without the charge, each case ran into the node's timeout
		// having spent a fraction of its steps).
		{name: "long strings compared per item", value: `${{ filter(input.a, {input.s == input.t}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long strings differing compared per item", value: `${{ filter(input.a, {input.s != input.t}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long strings ordered per item", value: `${{ filter(input.a, {input.s < input.t}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long strings ordered with let", value: `${{ let x = input.s; let y = input.t; filter(input.a, {x >= y}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long needle in a literal array per item", value: `${{ filter(input.a, {input.s in [input.t, input.t]}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long needle in constants per item", value: `${{ filter(input.a, {input.s in ["a", "b"]}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long computed key per item", value: `${{ filter(input.a, {input.o[input.s] != nil}) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "long strings in an array searched", value: `${{ input.s in map(input.a[:20000], {input.t}) }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "sort of long equal strings", value: `${{ sort(map(input.a[:20000], {#index % 2 == 0 ? input.s : input.t}))[0] == "" }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "max of long equal strings", value: `${{ max(map(input.a[:20000], {#index % 2 == 0 ? input.s : input.t})) == "" }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "uniq of long equal strings", value: `${{ len(uniq(map(input.a[:20000], {#index % 2 == 0 ? input.s : input.t}))) }}`, limits: unbounded, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "sortBy long keys", value: `${{ len(sortBy(map(input.a[:20000], {#index}), {# % 2 == 0 ? input.s : input.t})) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
		{name: "groupBy long keys", value: `${{ len(groupBy(map(input.a[:20000], {#index}), {# % 2 == 0 ? input.s : input.t})) }}`, limits: budget1M, code: protocol.CodeLimitExceeded, within: budgetWithin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := DefaultLimits()
			if tt.limits != nil {
				tt.limits(&l)
			}
			v, _ := json.Marshal(tt.value)
			wf := `{"nodes":[{"id":"boom","type":"set","timeoutMs":1000,"with":{"value":` + string(v) + `}}]}`
			var s *recSink
			peak := heapPeak(func() { s, _ = exprRun(t, context.Background(), l, reqBody(wf, input), tt.within) })
			if peak > 96<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
			s.failure(t)
			f := s.nodeFailed("boom")
			if f == nil || f.Error.Code != tt.code {
				t.Fatalf("node.failed = %+v, want %s", f, tt.code)
			}
		})
	}
}

// TestHostileExpressionCostDisconnect: a client leaving stops an
// evaluation of large operations that has neither a timeout nor a step
// budget, between two of them. The bound is loose (a shared two-core
// machine under the race detector took 0.87 s): without the check the
// evaluation runs for hours.
func TestHostileExpressionCostDisconnect(t *testing.T) {
	l := DefaultLimits()
	l.MaxExprSteps = -1
	for _, value := range []string{`${{ filter(input.a, {1 in input.a}) }}`, `${{ filter(input.a, {input.s matches '(a|b)*c'}) }}`} {
		t.Run(value, func(t *testing.T) {
			v, _ := json.Marshal(value)
			wf := `{"nodes":[{"id":"boom","type":"set","with":{"value":` + string(v) + `}}]}`
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, _ := exprRunCancel(t, ctx, l, reqBody(wf, costInput(400_000, 400_000)), 300*time.Millisecond+costSlack(300*time.Millisecond), func() { time.AfterFunc(300*time.Millisecond, cancel) })
			if f := s.nodeFailed("boom"); f == nil || f.Error.Code != protocol.CodeCancelled {
				t.Errorf("node.failed = %+v, want %s", f, protocol.CodeCancelled)
			}
		})
	}
}

// TestHostileExpressionCostConcurrent: sixteen map iterations building
// indented JSON at once stay within their budgets together.
func TestHostileExpressionCostConcurrent(t *testing.T) {
	wf := `{"nodes":[{"id":"boom","type":"map","with":{"items":"${{ 1..16 }}","concurrency":16,
		"nodes":[{"id":"j","type":"set","with":{"value":"${{ toJSON(fromJSON(input.n)) }}"}}]}}]}`
	var s *recSink
	peak := heapPeak(func() {
		s, _ = exprRun(t, context.Background(), DefaultLimits(), reqBody(wf, costInput(10, 10)), 2*time.Second)
	})
	if peak > 128<<20 {
		t.Errorf("the heap peaked %d MiB above its start", peak>>20)
	}
	if f := s.nodeFailed("boom"); f == nil || f.Error.Code != protocol.CodeLimitExceeded {
		t.Fatalf("node.failed = %+v, want %s", f, protocol.CodeLimitExceeded)
	}
}

// TestHostilePatternsBeforeAcceptance: a literal pattern over the bounds is
// a 400 naming the field, found before the checker compiles it.
func TestHostilePatternsBeforeAcceptance(t *testing.T) {
	for _, tt := range []struct{ name, pattern, want string }{
		{"five megabytes", strings.Repeat("a", 5<<20), "bytes is over the cap"},
		{"a large program", strings.Repeat("[a-z]{999}", 20), "instructions, over the cap"},
		{"nested counts", strings.Repeat("(?:(?:a{30}){30})", 12), "instructions, over the cap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			wf := `{"nodes":[{"id":"m","type":"set","with":{"value":"${{ input.s matches '` + tt.pattern + `' }}"}}]}`
			var inv *protocol.Invalid
			peak := heapPeak(func() { inv = prepareInvalid(t, newTestEngine(nil), reqBody(wf, "")) })
			wantProblems(t, inv.Details, []problem{{"workflow.nodes[0].with.value", []string{tt.want}}}, nil)
			if took := time.Since(start); took > costSlack(2*time.Second) { // a shared machine: the work is ~0.4 s of CPU
				t.Errorf("refused after %v", took)
			}
			if peak > 96<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
		})
	}
}
