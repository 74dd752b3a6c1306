package functions_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/protocol"
)

// End-to-end figures (make bench; issue 14): a real client posts each
// request over a loopback TCP connection to the handler behind a real
// net/http server, and reads the NDJSON stream to its result line. Every
// iteration's document is new text (its expressions carry the iteration
// number in a comment), so that the runner's compile caches miss, as for a
// workflow it has never seen. ns/node and allocs/node divide the whole
// round trip by the node count; allocs include the client's, a few per
// request. On a shared machine wall time (ns/node) follows the load;
// cpu-ns/node, the process's CPU time (server, client and GC together),
// much less so. They run at the runner's GC target (gc_test.go).

// e2eChain is a request of n set nodes, each adding one to the output of
// the node before it; salt makes its text unique.
func e2eChain(n, salt int, trace bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"n0","type":"set","with":{"value":0}}`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%d.output + 1 /* %d */ }}"}}`, i, i-1, i-1, salt)
	}
	fmt.Fprintf(&b, `],"output":"${{ nodes.n%d.output /* %d */ }}"}%s}`, n-1, salt, traceField(trace))
	return b.Bytes()
}

// e2eFanout is a request of one root and n-2 set nodes that all need it,
// merged by a last node that needs them all.
func e2eFanout(n, salt int, trace bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"root","type":"set","with":{"value":{"k":"v"}}}`)
	needs := make([]string, 0, n-2)
	for i := 1; i < n-1; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["root"],"with":{"value":"${{ nodes.root.output.k /* %d */ }}"}}`, i, salt)
		needs = append(needs, fmt.Sprintf(`"n%d"`, i))
	}
	fmt.Fprintf(&b, `,{"id":"merge","type":"set","needs":[%s],"with":{"value":"${{ len(nodes) /* %d */ }}"}}`, strings.Join(needs, ","), salt)
	fmt.Fprintf(&b, `],"output":"${{ nodes.merge.output }}"}%s}`, traceField(trace))
	return b.Bytes()
}

func traceField(trace bool) string {
	if trace {
		return `,"trace":true`
	}
	return ""
}

func BenchmarkE2E(b *testing.B) {
	for _, bc := range []struct {
		name  string
		nodes int
		body  func(n, salt int, trace bool) []byte
	}{
		{"chain1000", 1000, e2eChain},
		{"fanout1000", 1000, e2eFanout},
		{"chain10000", 10000, e2eChain},
	} {
		for _, trace := range []bool{false, true} {
			name := bc.name + "/trace=off"
			if trace {
				name = bc.name + "/trace=on"
			}
			b.Run(name, func(b *testing.B) {
				benchmarkE2E(b, bc.nodes, func(i int) []byte { return bc.body(bc.nodes, i, trace) })
			})
		}
		// warm: the same text every iteration, as bench/compare.sh sends
		// it with curl (the compile caches hit).
		b.Run(bc.name+"/warm", func(b *testing.B) {
			benchmarkE2E(b, bc.nodes, func(int) []byte { return bc.body(bc.nodes, 0, false) })
		})
	}
}

// BenchmarkInProcess is BenchmarkE2E without HTTP: the same documents
// (new text each iteration) go straight to the engine the handler uses,
// PrepareBody then Run, with the events written as NDJSON to io.Discard.
// Its ns/node against BenchmarkE2E's is what the HTTP path adds; its warm
// variants (the same text every iteration) are bench/compare.sh's engine
// figure. Its evicted variants are the warm ones with the CPU's caches
// emptied before each iteration (evictCaches), as a request over HTTP
// meets them: the client, the kernel and the machine's other work have
// run since the last one (bench/BASELINE.md, Round 15).
func BenchmarkInProcess(b *testing.B) {
	for _, bc := range []struct {
		name  string
		nodes int
		body  func(n, salt int, trace bool) []byte
	}{
		{"chain1000", 1000, e2eChain},
		{"fanout1000", 1000, e2eFanout},
		{"chain10000", 10000, e2eChain},
	} {
		for _, v := range []struct {
			name          string
			warm, evicted bool
		}{{"trace=off", false, false}, {"warm", true, false}, {"evicted", true, true}} {
			b.Run(bc.name+"/"+v.name, func(b *testing.B) {
				if v.evicted {
					b.Cleanup(evicting(b))
				}
				benchmarkInProcess(b, bc.nodes, func(i int) []byte {
					if v.warm {
						return bc.body(bc.nodes, 0, false)
					}
					return bc.body(bc.nodes, i, false)
				}, nil)
			})
		}
	}
}

// benchmarkInProcess prepares and runs body(i) for each iteration on the
// handler's engine, the events written as NDJSON by sink(h) or, when sink
// is nil, by a Writer writing each line at once, to io.Discard.
func benchmarkInProcess(b *testing.B, nodes int, body func(i int) []byte, sink func(*functions.Handler) *protocol.Writer) {
	h := newHandler(b, nil)
	eng := h.Engine
	if sink == nil {
		sink = func(*functions.Handler) *protocol.Writer { return protocol.NewWriter(io.Discard, "exec-bench", nil) }
	}
	// Executions before the timer, of body(-1): the text every warm
	// iteration repeats (its plan is then cached, as for a workflow the
	// runner has run before), and one no cold iteration does.
	// Twice: a plan is kept on its document's second sighting.
	for range 2 {
		x, err := eng.PrepareBody(body(-1))
		if err != nil {
			b.Fatal(err)
		}
		x.Run(context.Background(), sink(h))
	}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = body(i)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore := cpuTime()
	var evictCPU time.Duration
	b.ResetTimer()
	for i := range b.N {
		if evictBuf != nil {
			// Neither the time nor the CPU of the eviction is the engine's.
			b.StopTimer()
			c := cpuTime()
			evictCaches()
			evictCPU += cpuTime() - c
			b.StartTimer()
		}
		x, err := eng.PrepareBody(bodies[i])
		if err != nil {
			b.Fatal(err)
		}
		w := sink(h)
		if err := w.Emit(&protocol.Accepted{}); err != nil {
			b.Fatal(err)
		}
		if sum := x.Run(context.Background(), w); sum.Status != protocol.StatusCompleted {
			b.Fatalf("run ended %s", sum.Status)
		}
		bodies[i] = nil
	}
	b.StopTimer()
	reportPerNode(b, nodes, cpuTime()-cpuBefore-evictCPU, &before, &after)
}

// evictBuf, while a benchmark is evicting, is the memory evictCaches
// writes: twice the 32 MiB L3 cache of the machines bench/BASELINE.md
// reports. It is mapped outside the Go heap, so that it does not raise
// the heap goal and run the evicted variants with fewer collections than
// the warm ones.
var evictBuf []byte

// evicting makes benchmarkInProcess empty the CPU's caches before each
// iteration, until the function it returns is called.
func evicting(b *testing.B) func() {
	buf, err := syscall.Mmap(-1, 0, 64<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	evictBuf = buf
	return func() {
		evictBuf = nil
		syscall.Munmap(buf)
	}
}

// evictCaches writes a byte of every cache line of evictBuf.
func evictCaches() {
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}

// benchmarkE2E posts body(i) for each iteration through a loopback server
// and reads the stream to its result, which must say completed.
func benchmarkE2E(b *testing.B, nodes int, body func(i int) []byte) {
	srv := httptest.NewUnstartedServer(newHandler(b, nil))
	srv.Config.ReadHeaderTimeout = 10 * time.Second // as serveLocal
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	url := srv.URL + protocol.PathExecutions

	// Build the documents outside the timer: they stand for what arrives.
	// The first, body(-1), is posted twice before the timer, as in
	// benchmarkInProcess.
	bodies := make([][]byte, b.N+1)
	for i := range bodies {
		bodies[i] = body(i - 1)
	}
	post := func(i int) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[i]))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+goodToken)
		req.Header.Set("Content-Type", protocol.ContentTypeJSON)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		last, err := lastLine(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d, err %v, last line %.300s", resp.StatusCode, err, last)
		}
		if !bytes.Contains(last, []byte(`"result"`)) || !bytes.Contains(last, []byte(`"status":"completed"`)) {
			b.Fatalf("stream did not complete: %.300s", last)
		}
		bodies[i] = nil
	}
	first := bodies[0]
	post(0)
	bodies[0] = first
	post(0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		post(i + 1)
	}
	b.StopTimer()
	reportPerNode(b, nodes, cpuTime()-cpuBefore, &before, &after)
}

// reportPerNode reports a benchmark's CPU time, wall time, allocations and
// bytes per node; before holds the memory statistics at its start.
func reportPerNode(b *testing.B, nodes int, cpu time.Duration, before, after *runtime.MemStats) {
	runtime.ReadMemStats(after)
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(nodes), "cpu-ns/node")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(nodes), "allocs/node")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(nodes), "B/node")
}

// lastLine reads an NDJSON stream to its end and returns its last line.
func lastLine(r io.Reader) ([]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var last []byte
	for sc.Scan() {
		last = append(last[:0], sc.Bytes()...)
	}
	return last, sc.Err()
}

// BenchmarkInProcessSinks runs the warm chain of 1,000 of BenchmarkInProcess
// into each of the Writers the runner has, all to io.Discard, so that what
// the stream's Writer costs the engine shows without a socket or a client
// (bench/BASELINE.md, Round 8): sync writes each line at once, as
// BenchmarkInProcess does; coalesced is the handler's own, under its
// StreamOptions, a flusher goroutine writing every FlushInterval or more.
func BenchmarkInProcessSinks(b *testing.B) {
	coalesced := func(h *functions.Handler) *protocol.Writer {
		streamed, _ := h.StreamLimits()
		return protocol.NewStreamWriter(b.Context(), io.Discard, "exec-bench", func() error { return nil },
			protocol.StreamOptions{MaxEventBytes: h.Engine.Limits.WithDefaults().MaxEventBytes, MaxStreamBytes: streamed})
	}
	for _, sink := range []struct {
		name string
		new  func(*functions.Handler) *protocol.Writer
	}{{"sync", nil}, {"coalesced", coalesced}} {
		b.Run(sink.name, func(b *testing.B) {
			benchmarkInProcess(b, 1000, func(int) []byte { return e2eChain(1000, 0, false) }, sink.new)
		})
	}
}
