package engine

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// exprHostileInput is an input array of n numbers.
func exprHostileInput(n int) string {
	var b strings.Builder
	b.WriteString(`{"a":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1")
	}
	b.WriteString(`]}`)
	return b.String()
}

// exprHeapBytes is the live heap as runtime/metrics sees it.
func exprHeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// exprRun runs body with limits l against ctx and returns the sink and the
// time it took, failing when the run outlives within.
func exprRun(t *testing.T, ctx context.Context, l Limits, body string, within time.Duration) (*recSink, time.Duration) {
	t.Helper()
	return exprRunCancel(t, ctx, l, body, within, nil)
}

// exprRunCancel is exprRun calling before, when not nil, as the run starts.
func exprRunCancel(t *testing.T, ctx context.Context, l Limits, body string, within time.Duration, before func()) (*recSink, time.Duration) {
	t.Helper()
	x := prepareReq(t, New(l), body)
	if before != nil {
		before()
	}
	s := &recSink{}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		x.Run(ctx, s)
	}()
	select {
	case <-done:
	case <-time.After(within + 5*time.Second):
		t.Fatalf("the run did not end within %v", within+5*time.Second)
	}
	took := time.Since(start)
	if took > within {
		t.Errorf("the run took %v, want at most %v", took, within)
	}
	return s, took
}

// TestHostileExpressions: every expression an author can write ends in-band
// within its budget, node timeout or the execution's context.
func TestHostileExpressions(t *testing.T) {
	doubling := "let s0 = 'xxxxxxxxxxxxxxxx'; " // 16 bytes doubled 30 times is 16 GiB
	for i := 1; i <= 30; i++ {
		doubling += fmt.Sprintf("let s%d = s%d + s%d; ", i, i-1, i-1)
	}
	doubling += "len(s30)"
	tests := []struct {
		name   string
		wf     string
		input  string
		limits func(*Limits)
		code   protocol.Code
		within time.Duration
	}{
		{
			name: "string doubling let chain", code: protocol.CodeLimitExceeded, within: time.Second,
			wf: `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ ` + doubling + ` }}"}}]}`,
		},
		{
			name: "repeat of repeat", code: protocol.CodeLimitExceeded, within: time.Second,
			wf: `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ repeat(repeat('x', 1000000), 1000) }}"}}]}`,
		},
		{
			name: "join of split doubling in reduce", code: protocol.CodeLimitExceeded, within: 2 * time.Second,
			wf: `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ reduce(1..40, #acc + #acc, 'xy') }}"}}]}`,
		},
		{
			name: "toJSON of a large value in mixed text", code: protocol.CodeLimitExceeded, within: 2 * time.Second,
			limits: func(l *Limits) { l.MaxExprMemory = 1 << 20 },
			input:  exprHostileInput(100_000),
			wf:     `{"nodes":[{"id":"boom","type":"set","with":{"value":"x ${{ input.a }} ${{ toJSON(input.a) }}"}}]}`,
		},
		{
			name: "nested sum under timeoutMs", code: protocol.CodeTimeout, within: 1100 * time.Millisecond,
			limits: func(l *Limits) { l.MaxExprSteps = -1 },
			input:  exprHostileInput(100_000),
			wf:     `{"nodes":[{"id":"boom","type":"set","timeoutMs":1000,"with":{"value":"${{ sum(input.a, {sum(input.a, {# + 1})}) }}"}}]}`,
		},
		{
			name: "nested sum in when under timeoutMs", code: protocol.CodeTimeout, within: 1100 * time.Millisecond,
			limits: func(l *Limits) { l.MaxExprSteps = -1 },
			input:  exprHostileInput(100_000),
			wf:     `{"nodes":[{"id":"boom","type":"set","timeoutMs":1000,"when":"sum(input.a, {sum(input.a, {# + 1})}) > 0"}]}`,
		},
		{
			name: "nested predicates over the step budget", code: protocol.CodeLimitExceeded, within: 2 * time.Second,
			limits: func(l *Limits) { l.MaxExprSteps = 100_000 },
			input:  exprHostileInput(100_000),
			wf:     `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ none(input.a, {any(input.a, {# > 1})}) }}"}}]}`,
		},
		{
			name: "map items over the step budget", code: protocol.CodeLimitExceeded, within: time.Second,
			limits: func(l *Limits) { l.MaxExprSteps = 100_000 },
			input:  exprHostileInput(100_000),
			wf: `{"nodes":[{"id":"boom","type":"map","with":{"items":"${{ filter(map(input.a, {# + 1}), {# > 0}) }}",
				"nodes":[{"id":"x","type":"set"}]}}]}`,
		},
		{
			name: "output over the step budget", within: time.Second,
			limits: func(l *Limits) { l.MaxExprSteps = 50_000 },
			input:  exprHostileInput(100_000),
			wf:     `{"nodes":[{"id":"a","type":"set"}],"output":"${{ map(input.a, {# + 1}) }}"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := DefaultLimits()
			if tt.limits != nil {
				tt.limits(&l)
			}
			runtime.GC()
			before := exprHeapBytes()
			s, _ := exprRun(t, context.Background(), l, reqBody(tt.wf, tt.input), tt.within)
			term := s.failure(t)
			if grew := int64(exprHeapBytes()) - int64(before); grew > 256<<20 {
				t.Errorf("the live heap grew by %d MiB", grew>>20)
			}
			if tt.code == "" {
				if !strings.Contains(term.Error.Message, "maxExprSteps") {
					t.Errorf("terminal message %q does not name the budget", term.Error.Message)
				}
				return
			}
			f := s.nodeFailed("boom")
			if f == nil || f.Error.Code != tt.code {
				t.Fatalf("node.failed = %+v, want %s", f, tt.code)
			}
			if term.Error.NodeID != "boom" {
				t.Errorf("terminal names node %q, want boom", term.Error.NodeID)
			}
		})
	}
}

// TestHostileExpressionDisconnect: a client leaving stops an evaluation
// that has no timeout of its own.
func TestHostileExpressionDisconnect(t *testing.T) {
	l := DefaultLimits()
	l.MaxExprSteps = -1 // no bound
	wf := `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ sum(input.a, {sum(input.a, {# + 1})}) }}"}}]}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, took := exprRunCancel(t, ctx, l, reqBody(wf, exprHostileInput(100_000)), 400*time.Millisecond, func() { time.AfterFunc(300*time.Millisecond, cancel) })
	term := s.failure(t)
	if f := s.nodeFailed("boom"); f == nil || f.Error.Code != protocol.CodeCancelled {
		t.Errorf("node.failed = %+v, want %s (terminal %+v, after %v)", f, protocol.CodeCancelled, term.Error, took)
	}
	// The engine serves the next execution.
	s2, _ := runBody(t, newTestEngine(nil), reqBody(`{"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.x + 1 }}"}}]}`, `{"x":1}`))
	wantOutput(t, s2.result(t), `{"a":2}`)
}
