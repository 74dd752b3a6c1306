package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkPrepareCold is Prepare of a document the engine has never seen:
// each iteration's body is new text (its expressions carry the iteration
// number in a comment), so that no compile cache or memo hits, and it goes
// through PrepareBody, the path of a request body over HTTP (the envelope,
// the one-pass decode, the structure walk). us/node is the time per node,
// cpu-us/node the process's CPU time per node (GC included), steadier on a
// shared machine.
func BenchmarkPrepareCold(b *testing.B) {
	for _, bc := range []struct {
		name string
		body func(salt int) []byte
	}{
		{"chain1000", func(salt int) []byte { return saltedChain(1000, salt) }},
		{"fanout1000", func(salt int) []byte { return saltedFanout(1000, salt) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := New(DefaultLimits())
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = bc.body(i)
			}
			b.ReportAllocs()
			cpu := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				x, err := e.PrepareBody(bodies[i])
				if err != nil {
					b.Fatal(err)
				}
				x.discard()
				bodies[i] = nil
			}
			b.StopTimer()
			if cpu := cpuTime() - cpu; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1000/1000, "cpu-us/node")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000/1000, "us/node")
		})
	}
}

// saltedChain is chainBody(n) with salt in a comment of every expression.
func saltedChain(n, salt int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"n0","type":"set","with":{"value":0}}`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%d.output + 1 /* %d */ }}"}}`, i, i-1, i-1, salt)
	}
	fmt.Fprintf(&b, `],"output":"${{ nodes.n%d.output /* %d */ }}"}}`, n-1, salt)
	return b.Bytes()
}

// saltedFanout is a root, n-2 nodes that need it and a merge that needs
// them all, salt in a comment of every expression.
func saltedFanout(n, salt int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"root","type":"set","with":{"value":{"k":"v"}}}`)
	for i := 1; i < n-1; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["root"],"with":{"value":"${{ nodes.root.output.k /* %d */ }}"}}`, i, salt)
	}
	b.WriteString(`,{"id":"merge","type":"set","needs":[`)
	for i := 1; i < n-1; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"n%d"`, i)
	}
	fmt.Fprintf(&b, `],"with":{"value":"${{ len(nodes) /* %d */ }}"}}],"output":"${{ nodes.merge.output }}"}}`, salt)
	return b.Bytes()
}
