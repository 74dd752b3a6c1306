package engine

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Hostile request bodies before acceptance (issue 9, classes 1, 4 and
// duplicate keys): each is refused with a 400 naming the path and the limit,
// or prepared, within a stated time and with its allocations bounded; the
// engine then prepares the next, ordinary request.

// prepAllocLimit bounds how much the heap may grow while one hostile body
// is prepared: a 2 MB body must not cost ~100 MB.
const prepAllocLimit = 100 << 20

// prepChain is a chain of n set nodes, each reading len(nodes).
func prepChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"version":1,"workflow":{"nodes":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"n%d","type":"set"`, i)
		if i > 0 {
			fmt.Fprintf(&b, `,"needs":["n%d"]`, i-1)
		}
		b.WriteString(`,"with":{"value":"${{ len(nodes) }}"}}`)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// prepNested is a set node whose value is objects nested depth deep under
// keys of keyLen characters.
func prepNested(depth, keyLen int) string {
	key := strings.Repeat("k", keyLen)
	return `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":` +
		strings.Repeat(`{"`+key+`":`, depth) + `1` + strings.Repeat(`}`, depth) + `}}]}}`
}

// prepDeepSchema is an input schema of properties nested depth deep.
func prepDeepSchema(depth int) string {
	return `{"version":1,"workflow":{"input":` +
		strings.Repeat(`{"type":"object","properties":{"p":`, depth) + `{"type":"string"}` + strings.Repeat(`}}`, depth) +
		`,"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`
}

func TestHostilePrepare(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		path    string // "" : the body prepares
		message string
		within  time.Duration
	}{
		{name: "2 MB of objects 2,000 deep, 1,000-char keys", body: prepNested(2000, 1000),
			path: "workflow.nodes[0].with.value.", message: "nested deeper than maxDepth (128 levels)", within: 5 * time.Second},
		{name: "2 MB of objects 100 deep, 20,000-char keys", body: prepNested(100, 20_000), within: 5 * time.Second},
		{name: "20 KB of nested arrays", body: `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":` +
			strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + `}}]}}`,
			path: "workflow.nodes[0].with.value[0]", message: "maxDepth (128 levels)", within: 5 * time.Second},
		{name: "deep input value", body: `{"version":1,"workflow":{"nodes":[]},"input":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`,
			path: "input.a.a", message: "maxDepth", within: 5 * time.Second},
		{name: "input schema 3,200 deep", body: prepDeepSchema(3200),
			path: "workflow.input.properties", message: "maxDepth", within: 2 * time.Second},
		{name: "input schema under maxDepth, over maxSchemaDepth", body: prepDeepSchema(30),
			path: "workflow.input.properties.p.properties", message: "maxSchemaDepth (32 levels)", within: 2 * time.Second},
		{name: "input schema over maxSchemaBytes", body: `{"version":1,"workflow":{"input":{"description":"` + strings.Repeat("x", 300<<10) + `"},"nodes":[]}}`,
			path: "workflow.input", message: "over maxSchemaBytes (262144)", within: 2 * time.Second},
		{name: "len(nodes) chain of 1,000", body: prepChain(1000), within: 5 * time.Second},
		{name: "len(nodes) chain of 10,000", body: prepChain(10_000), within: 20 * time.Second},
		{name: "duplicate permissions", body: `{"version":1,"workflow":{"nodes":[]},"permissions":[],"permissions":null}`,
			path: "permissions", message: `duplicate key "permissions"`, within: time.Second},
		{name: "duplicate in a node's with", body: `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":{"x":1,"x":2}}}]}}`,
			path: "workflow.nodes[0].with.value.x", message: "duplicate key", within: time.Second},
		{name: "duplicate node field", body: `{"version":1,"workflow":{"nodes":[{"id":"a","id":"b","type":"set"}]}}`,
			path: "workflow.nodes[0].id", message: "duplicate key", within: time.Second},
		{name: "duplicate in runtime", body: `{"version":1,"workflow":{"nodes":[]},"runtime":{"http":{"policy":{"allowHosts":["a"],"allowHosts":["*"]}}}}`,
			path: "runtime.http.policy.allowHosts", message: "duplicate key", within: time.Second},
		{name: "6 MB of empty nodes", body: `{"version":1,"workflow":{"nodes":[{}` + strings.Repeat(`,{}`, 2_000_000) + `]}}`,
			path: "workflow.nodes", message: "more than maxNodes (10000) nodes", within: maxNodesWithin},
		{name: "6 MB of nodes that are not objects", body: `{"version":1,"workflow":{"nodes":[1` + strings.Repeat(`,1`, 3_000_000) + `]}}`,
			path: "workflow.nodes", message: "more than maxNodes (10000) nodes", within: maxNodesWithin},
		{name: "6 MB of empty nodes in a map's sub-graph", body: `{"version":1,"workflow":{"nodes":[{"id":"m","type":"map","with":{"items":[],"nodes":[{}` + strings.Repeat(`,{}`, 2_000_000) + `]}}]}}`,
			path: "workflow.nodes", message: "more than maxNodes (10000) nodes", within: maxNodesWithin},
		{name: "empty nodes nested in sub-graphs", body: `{"version":1,"workflow":{"nodes":[{"id":"m","type":"map","with":{"items":[],"nodes":[{"id":"n","type":"map","with":{"items":[],"nodes":[{}` + strings.Repeat(`,{}`, 1_000_000) + `]}}]}}]}}`,
			path: "workflow.nodes", message: "more than maxNodes (10000) nodes", within: maxNodesWithin},
		{name: "6 MB of empty nodes in a child workflow", body: `{"version":1,"workflow":{"nodes":[]},"runtime":{"workflows":[{"id":"c","nodes":[{}` + strings.Repeat(`,{}`, 2_000_000) + `]}]}}`,
			path: "runtime.workflows[0].nodes", message: "more than maxNodes (10000) nodes", within: maxNodesWithin},
		{name: "300,000 duplicate keys", body: `{"version":1,"workflow":{"nodes":[]},"input":{"a":1` + strings.Repeat(`,"a":1`, 300_000) + `}}`,
			path: "input.a", message: "duplicate key \"a\"", within: 5 * time.Second},
		{name: "duplicate in input", body: `{"version":1,"workflow":{"nodes":[]},"input":[{"a":{"b":1,"b":1}}]}`,
			path: "input[0].a.b", message: "duplicate key", within: time.Second},
	}
	e := New(DefaultLimits())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alloc := prepAllocated(func() {
				start := time.Now()
				x, err := e.PrepareBody([]byte(tt.body))
				took := time.Since(start)
				t.Logf("prepared in %v", took)
				if took > tt.within {
					t.Errorf("took %v, over %v", took, tt.within)
				}
				x.discard()
				if tt.path == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var inv *protocol.Invalid
				if !errors.As(err, &inv) {
					t.Fatalf("got %v, want a 400", err)
				}
				for _, d := range inv.Details {
					if strings.HasPrefix(d.Path, tt.path) && strings.Contains(d.Message, tt.message) {
						if len(d.Path) > 1024 || len(d.Message) > 1024 {
							t.Errorf("detail of %d+%d bytes", len(d.Path), len(d.Message))
						}
						return
					}
				}
				t.Fatalf("details %.500v, want %s: …%s…", inv.Details, tt.path, tt.message)
			})
			t.Logf("heap grew %d KB for a %d KB body", alloc>>10, len(tt.body)>>10)
			if alloc > prepAllocLimit+uint64(4*len(tt.body)) {
				t.Errorf("heap grew %d MB preparing a %d KB body", alloc>>20, len(tt.body)>>10)
			}
			if _, err := e.PrepareBody([]byte(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`)); err != nil {
				t.Fatalf("next request refused: %v", err)
			}
		})
	}
}

// maxNodesWithin bounds preparing the 6 MB bodies of too many nodes: a
// second or so on a quiet machine, many times that under -race on a
// loaded one (93 s before the decode stopped at maxNodes).
var maxNodesWithin = map[bool]time.Duration{false: 5 * time.Second, true: 30 * time.Second}[raceDetector]

// prepAllocated returns the peak growth of the live heap while f runs,
// sampled every millisecond (and at the end, with f's results still held).
func prepAllocated(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
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
	<-done
	if v := read(); v > peak.Load() {
		peak.Store(v)
	}
	if peak.Load() < base {
		return 0
	}
	return peak.Load() - base
}
