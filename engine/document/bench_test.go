package document_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	_ "github.com/runnerd/lambda-runner/engine/nodes"
)

// BenchmarkParse is the document's decode and check, as every request
// pays them: a chain of set nodes, nodes of every type with every member
// set, and a document whose every node breaks rules (the way to a 400);
// and the check alone. cpu-ns/op is the process's CPU time per
// iteration.
func BenchmarkParse(b *testing.B) {
	withs := engine.New(engine.Limits{}).WithSpecs()
	for _, bc := range []struct {
		name string
		doc  string
		bad  bool
	}{
		{"chain1000", benchDoc(1000, func(i int) string {
			if i == 0 {
				return `{"id":"n0","type":"set","with":{"value":0}}`
			}
			return fmt.Sprintf(`{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%d.output + 1 }}"}}`, i, i-1, i-1)
		}), false},
		{"kinds900", benchDoc(900, func(i int) string {
			return fmt.Sprintf(`{"id":"n%d","type":%q,"name":"N","description":"D","needs":[],"when":"true","with":%s,"retry":{"maxAttempts":3,"backoffMs":0,"factor":1.5,"maxBackoffMs":10},"timeoutMs":5,"onError":"continue"}`,
				i, benchKinds[i%len(benchKinds)][0], benchKinds[i%len(benchKinds)][1])
		}), false},
		{"invalid100", benchDoc(100, func(i int) string {
			return fmt.Sprintf(`{"id":"%d","type":"http","nedds":["a","a"],"with":{"url":"","methd":"GET","timeoutMs":-1,"headers":{"h":1}},"retry":{"factor":0.5},"onError":"continu"}`, i)
		}), true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			raw := []byte(bc.doc)
			b.ReportAllocs()
			cpu := cpuTime()
			for range b.N {
				var d document.Problems
				if document.Parse("workflow", raw, 0, withs, &d) == nil || (d.Len() > 0) != bc.bad {
					b.Fatalf("problems: %v", d.Errors())
				}
			}
			reportCPU(b, cpu)
		})
		// The check alone, of a document decoded once (checking it again
		// finds its with's numbers already turned into float64s).
		b.Run(bc.name+"/check", func(b *testing.B) {
			doc, err := document.Decode([]byte(bc.doc), 0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu := cpuTime()
			for range b.N {
				var d document.Problems
				document.Check("workflow", doc, withs, &d)
				if (d.Len() > 0) != bc.bad {
					b.Fatalf("problems: %v", d.Errors())
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the CPU time per iteration since start (GC included),
// steadier than ns/op on a shared machine.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// benchKinds are a with of each node type with every member set.
var benchKinds = [][2]string{
	{"set", `{"value":{"a":[1,2]}}`},
	{"fail", `{"message":"m","code":"E_X"}`},
	{"map", `{"items":[1,2],"concurrency":2,"nodes":[{"id":"i","type":"set","with":{"value":"${{ item }}"}}],"output":"${{ nodes.i.output }}"}`},
	{"workflow", `{"workflow":"child","input":{"x":1}}`},
	{"model", `{"role":"r","system":"s","prompt":"p","messages":[{"role":"user","content":"c"}],"temperature":0.5,"maxTokens":100,"json":{"type":"object"}}`},
	{"agent", `{"role":"r","system":"s","prompt":"p","messages":"${{ input.m }}","temperature":"${{ input.t }}","maxTokens":"${{ input.n }}","toolsets":["t"],"tools":["t.x"],"maxSteps":3}`},
	{"tool", `{"toolset":"t","tool":"x","arguments":{"a":1}}`},
	{"http", `{"method":"GET","url":"https://example.com","query":{"q":"1"},"headers":{"h":"v"},"body":{"b":1},"timeoutMs":100,"responseType":"json","failOnStatus":true}`},
	{"code", `{"code":"return 1","input":{"x":1}}`},
}

func benchDoc(n int, node func(i int) string) string {
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = node(i)
	}
	return `{"id":"w","version":1,"input":{"type":"object"},"nodes":[` + strings.Join(nodes, ",") + `],"output":"${{ nodes }}"}`
}
