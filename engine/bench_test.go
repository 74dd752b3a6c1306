package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// Targets (docs/protocol.md): under 20 µs and 50 allocations per node, the
// events written as NDJSON included. Run with make bench.

// chainBody is a request of n set nodes, each adding one to the output of
// the node before it.
func chainBody(n int) string {
	nodes := make([]string, n)
	nodes[0] = `{"id":"n0","type":"set","with":{"value":0}}`
	for i := 1; i < n; i++ {
		nodes[i] = fmt.Sprintf(`{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%d.output + 1 }}"}}`, i, i-1, i-1)
	}
	return reqBody(`{"nodes":[`+strings.Join(nodes, ",")+`],"output":"${{ nodes.n`+fmt.Sprint(n-1)+`.output }}"}`, "")
}

// fanoutBody is a request of n set nodes: one root and n-1 nodes that all
// need it, so that n-1 nodes are ready at once.
func fanoutBody(n int) string {
	nodes := make([]string, n)
	nodes[0] = `{"id":"root","type":"set","with":{"value":{"k":"v"}}}`
	for i := 1; i < n; i++ {
		nodes[i] = fmt.Sprintf(`{"id":"n%d","type":"set","needs":["root"],"with":{"value":"${{ nodes.root.output.k }}"}}`, i)
	}
	return reqBody(`{"nodes":[`+strings.Join(nodes, ",")+`]}`, "")
}

func BenchmarkChain1000(b *testing.B)  { benchmarkRun(b, chainBody(1000), 1000) }
func BenchmarkFanout1000(b *testing.B) { benchmarkRun(b, fanoutBody(1000), 1000) }

// benchmarkRun measures Run alone (Prepare is outside the timer), writing
// real NDJSON to io.Discard, and reports the cost per node.
func benchmarkRun(b *testing.B, body string, nodes int) {
	benchmarkRunOn(b, New(DefaultLimits()), body, nodes)
}

// benchmarkRunOn is benchmarkRun on e (an engine with an Observer, say).
func benchmarkRunOn(b *testing.B, e *Engine, body string, nodes int) {
	req := decodeReq(b, body)
	b.ReportAllocs()
	var mallocs uint64
	var before, after runtime.MemStats
	b.StopTimer()
	for range b.N {
		x, err := e.Prepare(req)
		if err != nil {
			b.Fatal(err)
		}
		w := protocol.NewWriter(io.Discard, testExecutionID, nil)
		runtime.ReadMemStats(&before)
		b.StartTimer()
		sum := x.Run(context.Background(), w)
		b.StopTimer()
		runtime.ReadMemStats(&after)
		mallocs += after.Mallocs - before.Mallocs
		if sum.Status != protocol.StatusCompleted || sum.Nodes != int64(nodes) {
			b.Fatalf("run ended %s after %d nodes, want completed after %d", sum.Status, sum.Nodes, nodes)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
	b.ReportMetric(float64(mallocs)/float64(b.N)/float64(nodes), "allocs/node")
}

func BenchmarkPrepare(b *testing.B) {
	hello, err := os.ReadFile("../examples/hello.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		body string
	}{
		{"hello", string(hello)},
		{"chain1000", chainBody(1000)},
	} {
		// The same request every iteration: from the second on, its
		// document's plan is cached (plancache.go).
		b.Run(bc.name, func(b *testing.B) {
			e := New(DefaultLimits())
			req := decodeReq(b, bc.body)
			b.ReportAllocs()
			for range b.N {
				if _, err := e.Prepare(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		// cold: a document never seen, compiled in full.
		b.Run(bc.name+"/cold", func(b *testing.B) {
			e := New(DefaultLimits())
			e.plans = nil
			req := decodeReq(b, bc.body)
			b.ReportAllocs()
			for range b.N {
				if _, err := e.Prepare(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// PrepareBody, as the handler calls it: the body decoded too, warm
	// (the same body) and cold (its document new text every iteration).
	for _, warm := range []bool{true, false} {
		name := "body/chain1000/warm"
		if !warm {
			name = "body/chain1000/cold"
		}
		b.Run(name, func(b *testing.B) {
			e := New(DefaultLimits())
			chain := chainBody(1000)
			bodies := make([][]byte, b.N)
			for i := range bodies {
				if warm && i > 0 {
					bodies[i] = bodies[0]
					continue
				}
				bodies[i] = []byte(strings.Replace(chain, `"workflow":{`, fmt.Sprintf(`"workflow":{"id":"w%d",`, i), 1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := e.PrepareBody(bodies[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
