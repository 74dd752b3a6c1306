package engine

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// The benchmarks run executions as the handler does, writing every event as
// NDJSON through protocol.Writer (to io.Discard), so that per-node costs
// include event encoding. Besides ns/op, B/op and allocs/op they report
// per-node figures: B/node, allocs/node, ns/node.

// benchLimits are limits roomy enough for the benchmark workloads.
func benchLimits() Limits {
	l := DefaultLimits()
	l.MaxNodes = 20_001
	l.MaxMapItems = 10_000
	l.MaxConcurrency = 16
	l.MaxChildDepth = 8
	return l
}

// benchMapDoc maps n items at concurrency 16 through one trivial set node.
func benchMapDoc(n int) (wf, input string) {
	wf = `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ input.items }}","concurrency":16,"nodes":[
		{"id":"inner","type":"set","with":{"value":"${{ item }}"}}],"output":"${{ nodes.inner.output }}"}}],
		"output":{"count":"${{ len(nodes.each.output) }}"}}`
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return wf, `{"items":[` + strings.Join(items, ",") + `]}`
}

// benchChainDocs returns a workflow calling a chain of depth child
// workflows, the last of which sets a value.
func benchChainDocs(depth int) (wf string, children []string) {
	wf = `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"c1","input":{"v":1}}}],"output":"${{ nodes.call.output }}"}`
	for i := 1; i <= depth; i++ {
		if i == depth {
			children = append(children, fmt.Sprintf(`{"id":"c%d","nodes":[{"id":"leaf","type":"set","with":{"value":"${{ input.v }}"}}],"output":"${{ nodes.leaf.output }}"}`, i))
			continue
		}
		children = append(children, fmt.Sprintf(`{"id":"c%d","nodes":[{"id":"next","type":"workflow","with":{"workflow":"c%d","input":"${{ input }}"}}],"output":"${{ nodes.next.output }}"}`, i, i+1))
	}
	return wf, children
}

// benchFlatDoc is n independent set nodes.
func benchFlatDoc(n int) string {
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"id":"n%d","type":"set","with":{"value":%d}}`, i, i)
	}
	return `{"nodes":[` + strings.Join(nodes, ",") + `]}`
}

// benchRun runs req b.N times, each time freshly prepared outside the timer
// (an Execution runs once). It reports per-node costs of Run alone and fails
// on anything but a completed result.
func benchRun(b *testing.B, req *protocol.ExecutionRequest, nodesPerRun int64) {
	e := New(benchLimits())
	var (
		ms0, ms1      runtime.MemStats
		elapsed       time.Duration
		bytes, allocs uint64
	)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		x, err := e.Prepare(req)
		if err != nil {
			b.Fatal(err)
		}
		s := &benchSink{Writer: protocol.NewWriter(io.Discard, "bench", nil)}
		runtime.ReadMemStats(&ms0)
		began := time.Now()
		b.StartTimer()
		sum := x.Run(context.Background(), s)
		b.StopTimer()
		elapsed += time.Since(began)
		runtime.ReadMemStats(&ms1)
		bytes += ms1.TotalAlloc - ms0.TotalAlloc
		allocs += ms1.Mallocs - ms0.Mallocs
		if sum.Status != protocol.StatusCompleted || sum.Nodes != nodesPerRun {
			b.Fatalf("status %s after %d nodes, want completed after %d: %s", sum.Status, sum.Nodes, nodesPerRun, wtJSON(s.terminal))
		}
		b.StartTimer()
	}
	b.StopTimer()
	total := float64(b.N) * float64(nodesPerRun)
	b.ReportMetric(float64(bytes)/total, "B/node")
	b.ReportMetric(float64(allocs)/total, "allocs/node")
	b.ReportMetric(float64(elapsed.Nanoseconds())/total, "ns/node")
}

// benchSink writes events as the handler does and remembers the terminal.
type benchSink struct {
	*protocol.Writer
	terminal protocol.Terminal
}

func (s *benchSink) Finish(t protocol.Terminal) error {
	s.terminal = t
	return s.Writer.Finish(t)
}

// BenchmarkMap10000 maps 10,000 items at concurrency 16 through a trivial
// set node: 10,001 nodes a run.
func BenchmarkMap10000(b *testing.B) {
	wf, input := benchMapDoc(10_000)
	benchRun(b, wtReq(b, wf, input), 10_001)
}

// BenchmarkChildDepth8 calls child workflows 8 deep: 9 nodes a run.
func BenchmarkChildDepth8(b *testing.B) {
	wf, children := benchChainDocs(8)
	benchRun(b, wtReq(b, wf, "", children...), 9)
}

// BenchmarkFlat1000 runs 1,000 independent set nodes, for the per-node cost
// of the scheduler without a map.
func BenchmarkFlat1000(b *testing.B) {
	benchRun(b, wtReq(b, benchFlatDoc(1000), ""), 1000)
}

// BenchmarkPeakHeap10000 reports the peak heap (stacks included) in use
// while a 10,000-node execution is prepared and run, above what was in use
// before it: a map of 10,000 items, and a flat document of 10,000 nodes.
func BenchmarkPeakHeap10000(b *testing.B) {
	for _, c := range benchPeakCases(b) {
		b.Run(c.name, func(b *testing.B) {
			var peak uint64
			for range b.N {
				peak = max(peak, peakHeap(b, c.req, c.nodes))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
		})
	}
}

// TestPeakHeap10000Nodes holds the peak heap (stacks included) of a
// 10,000-node execution under 64 MB.
func TestPeakHeap10000Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a 10,000-node execution")
	}
	const limit = 64 << 20
	for _, c := range benchPeakCases(t) {
		t.Run(c.name, func(t *testing.T) {
			peak := peakHeap(t, c.req, c.nodes)
			t.Logf("peak heap in use: %.1f MB", float64(peak)/(1<<20))
			if peak > limit {
				t.Errorf("peak heap %.1f MB, over %d MB", float64(peak)/(1<<20), limit>>20)
			}
		})
	}
}

type benchPeakCase struct {
	name  string
	req   *protocol.ExecutionRequest
	nodes int64
}

func benchPeakCases(tb testing.TB) []benchPeakCase {
	wf, input := benchMapDoc(10_000)
	return []benchPeakCase{
		{"map", wtReq(tb, wf, input), 10_001},
		{"flat", wtReq(tb, benchFlatDoc(10_000), ""), 10_000},
	}
}

// heapMetrics are the runtime/metrics whose sum is the memory an execution
// holds: the heap in use (MemStats.HeapInuse: live and not yet swept
// objects, and the free space of their spans) plus goroutine stacks, which
// a wide graph can make as large as the heap.
var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/heap/stacks:bytes"}

func heapInUse(s []metrics.Sample) uint64 {
	metrics.Read(s)
	var n uint64
	for _, m := range s {
		n += m.Value.Uint64()
	}
	return n
}

// peakHeap prepares and runs req once, sampling the heap and stacks in use
// every 100µs, and returns the peak above what was in use before Prepare.
func peakHeap(tb testing.TB, req *protocol.ExecutionRequest, nodes int64) uint64 {
	tb.Helper()
	e := New(benchLimits())
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	runtime.GC()
	base := heapInUse(samples)
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := make([]metrics.Sample, len(samples))
		copy(s, samples)
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, heapInUse(s))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	x, err := e.Prepare(req)
	if err != nil {
		tb.Fatal(err)
	}
	sink := &benchSink{Writer: protocol.NewWriter(io.Discard, "bench", nil)}
	sum := x.Run(context.Background(), sink)
	close(stop)
	<-done
	if sum.Status != protocol.StatusCompleted || sum.Nodes != nodes {
		tb.Fatalf("status %s after %d nodes, want completed after %d", sum.Status, sum.Nodes, nodes)
	}
	if peak < base {
		return 0
	}
	return peak - base
}
