package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/limits"
	"github.com/runnerd/lambda-runner/protocol"
)

// Issue 45, class 2: encoding amplified a small request into a gigabyte.
// A code node's with.input was encoded with HTML escaping (six bytes a <)
// before a worker was free, uncharged and uncancellable, then copied again
// into the frame: 16 nodes of [s, s], s 4 MB of <, peaked at 866-992 MB
// and ended 20-51 s past a 5.5 s deadline. Now the one encoder of author
// values (encodeAuthor) sizes it as written, charges it to the memory
// budget before it is allocated and writes it once, < as one byte: every
// character of the class either runs within memory or is refused in-band,
// and the terminal event comes by the deadline.
func TestHostileCodeInputEncoding(t *testing.T) {
	if testing.Short() {
		t.Skip("sends hundreds of megabytes to sandbox workers")
	}
	const deadline = 5 * time.Second
	type tc struct {
		name, char string
		nodes      int
		complete   bool // must complete, not only end in-band
	}
	var cases []tc
	for _, c := range []struct{ name, char string }{
		{"<", "<"}, {">", ">"}, {"&", "&"}, {`"`, `"`}, {`\`, `\`},
		{"U+0001", "\x01"}, {"U+2028", "\u2028"}, {"newline", "\n"},
	} {
		cases = append(cases, tc{name: "16 nodes of " + c.name, char: c.char, nodes: 16})
	}
	// Legitimate: markup as large as the request allows runs.
	cases = append(cases, tc{name: "one node of <", char: "<", nodes: 1, complete: true})
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := strings.Repeat(tt.char, (4<<20)/len(tt.char))
			var nodes []string
			for i := range tt.nodes {
				nodes = append(nodes, fmt.Sprintf(`{"id":"c%d","type":"code","with":{"input":["${{ input.s }}","${{ input.s }}"],"code":"return input[0].length + input[1].length"}}`, i))
			}
			body := fmt.Sprintf(`{"version":1,"workflow":%s,"input":%s}`, codeDoc(strings.Join(nodes, ",")), rawJSON(t, map[string]any{"s": s}))
			e, _ := codeEngine(t, Limits{MemoryMB: 512, MaxDuration: deadline, Reserve: 500 * time.Millisecond})
			x, err := e.PrepareBody([]byte(body))
			if err != nil {
				t.Fatalf("refused: %.300v", err)
			}
			rec := &recSink{}
			var took time.Duration
			var workers int64
			peak := heapPeak(func() {
				workers = workersPeakRSS(func() {
					start := time.Now()
					x.Run(context.Background(), rec)
					took = time.Since(start)
				})
			})
			term := rec.terminal(t)
			t.Logf("%v; runner heap peak +%d MiB, workers' RSS peak %d MiB together; %s", took.Round(time.Millisecond), peak>>20, workers>>20, describe(term))
			if took > deadline+500*time.Millisecond {
				t.Errorf("the terminal event came after %v, past the %v deadline and its half second", took, deadline)
			}
			switch term := term.(type) {
			case *protocol.Result:
				if want := strconv.Itoa(2 * len([]rune(s))); !strings.Contains(string(term.Output), want) {
					t.Errorf("output %.200s, want lengths %s", term.Output, want)
				}
			case *protocol.Error:
				if tt.complete {
					t.Fatalf("failed: %s", term.Error.Message)
				}
				// In-band, by a bound: never a crash or an internal error.
				ok := false
				for _, c := range []protocol.Code{protocol.CodeMemoryBudgetExceeded, protocol.CodeLimitExceeded, protocol.CodeDeadlineExceeded} {
					ok = ok || strings.Contains(term.Error.Message, string(c))
				}
				if !ok {
					t.Errorf("failed with %q, want a bound named", term.Error.Message)
				}
			}
			// The budget of a 512 MB runner is 128 MiB; before, 16 nodes
			// held 6 to 8 times it.
			if peak > 256<<20 {
				t.Errorf("the runner's heap grew %d MiB", peak>>20)
			}
			// Two workers, each under its kernel limit (64 MiB) and what
			// its runtime starts with.
			if workers > 2*(limits.DefaultMaxCodeMemory+48<<20) {
				t.Errorf("the workers' RSS peaked at %d MiB together", workers>>20)
			}
		})
	}
}

// Issue 45, class 7: markup up to the output cap is a legitimate result.
// The worker's reply was encoded with HTML escaping and its size measured
// escaped: a 2 MB HTML table, or 1 MB of <, failed OUTPUT_TOO_LARGE under
// the 4 MiB cap.
func TestCodeMarkupOutput(t *testing.T) {
	e, _ := codeEngine(t, Limits{})
	for _, tt := range []struct {
		name, code string
		n          int // the output's length
	}{
		{"1 MiB of <", "return '<'.repeat(1 << 20)", 1 << 20},
		{"<>& near the cap", "return '<>&'.repeat(((4 << 20) - 4096) / 3)", ((4 << 20) - 4096) / 3 * 3},
		{"a 2 MB HTML table", "const row = '<tr><td class=\"a\">1 &lt; 2</td><td>&amp;</td></tr>'; return '<table>' + row.repeat(2000000 / row.length) + '</table>'", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":`+strconv.Quote(tt.code)+`}}`), "")
			s, _ := runBody(t, e, body)
			res := s.result(t)
			var out map[string]string
			if err := json.Unmarshal(res.Output, &out); err != nil {
				t.Fatal(err)
			}
			if tt.n >= 0 && len(out["c"]) != tt.n {
				t.Errorf("output of %d bytes, want %d", len(out["c"]), tt.n)
			}
			if bytes.Contains(res.Output, []byte(`\u003c`)) {
				t.Errorf("the result escapes < as HTML")
			}
		})
	}
}

// Issue 45, class 8: what the code throws while its result is read is
// CODE_ERROR with the thrown message, whenever it throws.
func TestCodeThrowsWhileRead(t *testing.T) {
	e, _ := codeEngine(t, Limits{})
	for _, tt := range []struct{ name, code, msg string }{
		{"getter", "return {get x() { throw new Error('e') }}", "Error: e"},
		{"getter throwing a string", "return {a: 1, get x() { throw 'plain' }}", "plain"},
		{"toJSON", "return [{toJSON() { throw new TypeError('tj') }}]", "TypeError: tj"},
		{"proxy trap", "return new Proxy({}, {ownKeys() { throw new Error('keys') }})", "keys"},
		{"resolved promise of a getter", "return Promise.resolve({get x() { throw new Error('p') }})", "Error: p"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":`+strconv.Quote(tt.code)+`}}`), "")
			s, _ := runBody(t, e, body)
			f := s.nodeFailed("c")
			if f == nil {
				t.Fatalf("no node.failed; events %v", s.all())
			}
			if f.Error.Code != protocol.CodeCodeError || !strings.Contains(f.Error.Message, tt.msg) {
				t.Errorf("node.failed %s: %q, want CODE_ERROR with %q", f.Error.Code, f.Error.Message, tt.msg)
			}
		})
	}
}

// Issue 45, class 2, distributed: items: map(1..190, input.s), s 0.7 MB of
// <, were each encoded (4.2 MB of \u003c) before any size check: 802 MB
// from a 0.7 MB request. Each item is now sized, never encoded, until its
// batch is sent, and a batch's event is charged while it is held: the map
// runs, in events under the invocation limit, with < as one byte.
func TestHostileDistributeItemEncoding(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a hundred megabytes to child invocations")
	}
	s := strings.Repeat("<", 700<<10)
	body := fmt.Sprintf(`{"version":1,"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":"${{ map(1..190, input.s) }}","distribute":{"invocations":4},"nodes":[
		{"id":"n","type":"set","with":{"value":"${{ len(item) }}"}}],"output":"${{ nodes.n.output }}"}}],"output":"${{ sum(nodes.each.output) }}"},"input":%s}`, rawJSON(t, map[string]any{"s": s}))
	parent, fo := fanEngines(func(l *Limits) { l.MemoryMB = 512 })
	var largest, escaped atomic.Int64
	parent.Services.FanOut = fanOutFunc(func(ctx context.Context, payload []byte) (io.ReadCloser, error) {
		for n := int64(len(payload)); ; {
			if cur := largest.Load(); n <= cur || largest.CompareAndSwap(cur, n) {
				break
			}
		}
		escaped.Add(int64(bytes.Count(payload, []byte(`\u003c`))))
		return fo.Invoke(ctx, payload)
	})
	// The collector at work after every 10% of growth, so that the heap
	// stays near what is live (as GOMEMLIMIT keeps it), the children's
	// included: they run in this process.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var rec *recSink
	peak := heapPeak(func() { rec, _ = fanRun(t, nil, parent, body) })
	res := rec.result(t)
	t.Logf("heap peak +%d MiB, largest event %d bytes; %.100s", peak>>20, largest.Load(), res.Output)
	if want := strconv.Itoa(190 * len(s)); string(res.Output) != want {
		t.Errorf("output %.100s, want %s", res.Output, want)
	}
	if largest.Load() > batch.MaxPayloadBytes {
		t.Errorf("an event of %d bytes, over %d", largest.Load(), batch.MaxPayloadBytes)
	}
	if escaped.Load() > 0 {
		t.Errorf("%d < written as \\u003c in the events", escaped.Load())
	}
	// Four events of 6 MB in flight, each decoded by its child (in this
	// process too: about 190 MiB measured, the children's copies of their
	// events and items most of it); before, 800 MB were encoded first.
	if peak > 256<<20 {
		t.Errorf("the heap grew %d MiB", peak>>20)
	}
}

// rawJSON is v as a client would write it: HTML characters as they are.
func rawJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// workersPeakRSS runs f and returns the peak of the resident memory of
// this process's child processes (the sandbox workers) together, sampled
// every 2 ms from /proc; 0 where there is none.
func workersPeakRSS(f func()) int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := childrenRSS(); n > peak.Load() {
				peak.Store(n)
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
	return peak.Load()
}

// childrenRSS sums VmRSS of this process's children.
func childrenRSS() int64 {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var total int64
	for _, tf := range tasks {
		b, _ := os.ReadFile(tf)
		for _, pid := range strings.Fields(string(b)) {
			st, err := os.ReadFile("/proc/" + pid + "/status")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(st), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					total += kb << 10
				}
			}
		}
	}
	return total
}
