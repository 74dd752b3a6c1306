package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Round 21: the result is sized before it is encoded. Outputs are counted
// in the memory budget by their bytes in memory, and JSON can take six
// times as many: 39 outputs of 3 MB of control characters, inside every
// bound, made a 749 MB result (and 3 GB of RSS) before the stream limit
// refused it. However the bytes escape, and however many nodes make them,
// a result that cannot fit is refused with the heap near its outputs'
// size, in an error event naming the limit.
func TestHostileResultEncoding(t *testing.T) {
	const streamLimit = 4 << 20
	nodes := func(n int, value string) string {
		var b strings.Builder
		b.WriteString(`{"nodes":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"n%d","type":"set","with":{"value":"${{ %s }}"}}`, i, value)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	tests := []struct {
		name, workflow, input string
		refuse                bool
	}{
		{"control characters, six bytes each", nodes(20, "repeat(input.s, 65536)"), `{"s":"\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u000b\u000e\u000f\u0010\u0011\u0012\u0013\u0014"}`, true},
		{"HTML characters, six bytes each", nodes(20, "repeat(input.s, 65536)"), `{"s":"<><><><>&&&&<<>>"}`, true},
		{"quotes, two bytes each", nodes(20, "repeat(input.s, 65536)"), `{"s":"\"\"\"\"\\\\\\\\\"\"\"\"\\\\\\\\"}`, true},
		{"plain bytes over the limit", nodes(20, "repeat(input.s, 65536)"), `{"s":"abcdefghijklmnop"}`, true},
		{"numbers", nodes(20, "1..200000"), `{}`, true},
		{"one output block repeating an output", `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ repeat(input.s, 131072) }}"}}],"output":{"x":"${{ [nodes.a.output, nodes.a.output, nodes.a.output, nodes.a.output, nodes.a.output, nodes.a.output, nodes.a.output, nodes.a.output] }}"}}`, `{"s":"\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001"}`, true},
		{"escaped but within the limit", nodes(2, "repeat(input.s, 16384)"), `{"s":"\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"version":1,"workflow":%s,"input":%s}`, tt.workflow, tt.input)
			l := DefaultLimits()
			l.MemoryBudget = 256 << 20
			e := New(l)
			var out bytes.Buffer
			w := protocol.NewStreamWriter(t.Context(), &out, testExecutionID, nil, protocol.StreamOptions{MaxEventBytes: l.MaxEventBytes, MaxStreamBytes: streamLimit})
			var sum protocol.Summary
			start := time.Now()
			peak := heapPeak(func() {
				x, err := e.PrepareBody([]byte(body))
				if err != nil {
					t.Fatalf("refused: %.300v", err)
				}
				sum = x.Run(t.Context(), w)
			})
			took := time.Since(start)
			last := lastLine(t, out.Bytes())
			t.Logf("%v, heap peak +%d MiB, %d bytes sent: %.200s", took, peak>>20, out.Len(), last)
			if !tt.refuse {
				if sum.Status != protocol.StatusCompleted {
					t.Fatalf("ended %s: %.300s", sum.Status, last)
				}
				return
			}
			if sum.Status != protocol.StatusFailed || !strings.Contains(last, "LIMIT_EXCEEDED") || !strings.Contains(last, "maxStreamBytes") {
				t.Errorf("ended %s: %.300s", sum.Status, last)
			}
			// The outputs are at most 16 MiB in memory here; their
			// encoding would be up to six times that.
			if peak > 48<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
			if took > costSlack(2*time.Second) {
				t.Errorf("took %v", took)
			}
		})
	}
}

// lastLine returns the stream's terminal line, checked to be JSON.
func lastLine(t *testing.T, stream []byte) string {
	t.Helper()
	var last string
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		last = sc.Text()
	}
	if !json.Valid([]byte(last)) {
		t.Fatalf("the last line is not JSON: %.200s", last)
	}
	return last
}

// Round 21: an output nested deeper than json.Valid checks (10,000
// levels) is not masked as if a secret had broken its encoding: up to
// what JSON decoders read it is sent as it is, and past it the result is
// refused saying so.
func TestDeepOutputNotMasked(t *testing.T) {
	// The result line nests its output map and the arrays in it: 2 + arrays.
	for _, tt := range []struct {
		arrays int
		sent   bool
	}{{100, true}, {9_998, true}, {9_999, false}, {20_000, false}} {
		t.Run(fmt.Sprint(tt.arrays), func(t *testing.T) {
			body := fmt.Sprintf(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":"${{ reduce(1..%d, [#acc], 0) }}"}}]}}`, tt.arrays)
			x := prepareReq(t, New(DefaultLimits()), body)
			var out bytes.Buffer
			w := protocol.NewStreamWriter(t.Context(), &out, testExecutionID, nil, protocol.StreamOptions{MaxStreamBytes: 20 << 20})
			sum := x.Run(t.Context(), w)
			last := lastLine(t, out.Bytes())
			if strings.Contains(last, "REDACTED") {
				t.Fatalf("masked: %.300s", last)
			}
			if !tt.sent {
				if sum.Status != protocol.StatusFailed || !strings.Contains(last, "nests deeper than 10000 levels") {
					t.Errorf("ended %s: %.300s", sum.Status, last)
				}
				return
			}
			if sum.Status != protocol.StatusCompleted || strings.Count(last, "[") != tt.arrays {
				t.Errorf("ended %s with %d arrays: %.200s", sum.Status, strings.Count(last, "["), last)
			}
		})
	}
}

// Round 21: a traced value is sized before it is encoded too. Sixteen
// nodes tracing outputs of 2 MB of control characters at once encoded
// 12 MB each to send 64 KiB of it; the marker's preview is made from the
// value's start alone, and says the value's whole length.
func TestHostileTracedEncoding(t *testing.T) {
	const s16 = `\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001`
	tests := []struct{ name, value, input string }{
		{"control characters", "repeat(input.s, 131072)", `{"s":"` + s16 + `"}`},
		{"a long array of them", "map(1..65536, input.s)", `{"s":"` + s16 + `"}`},
		{"arrays of arrays of them", "map(1..256, map(1..256, input.s))", `{"s":"` + s16 + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"version":1,"trace":true,"workflow":{"nodes":[{"id":"m","type":"map","with":{"items":"${{ 1..16 }}","nodes":[` +
				`{"id":"a","type":"set","with":{"value":"${{ ` + tt.value + ` }}"}}]}}]},"input":` + tt.input + `}`
			l := DefaultLimits()
			x := prepareReq(t, New(l), body)
			var out bytes.Buffer
			w := protocol.NewStreamWriter(t.Context(), &out, testExecutionID, nil, protocol.StreamOptions{MaxEventBytes: l.MaxEventBytes, MaxStreamBytes: 20 << 20})
			var sum protocol.Summary
			peak := heapPeak(func() { sum = x.Run(t.Context(), w) })
			t.Logf("heap peak +%d MiB, %d bytes sent", peak>>20, out.Len())
			if peak > 160<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
			_ = sum
			found := false
			for _, line := range strings.Split(out.String(), "\n") {
				if !strings.Contains(line, `"nodeId":"m[0].a"`) || !strings.Contains(line, `"node.completed"`) {
					continue
				}
				found = true
				var ev struct {
					Output struct {
						Truncated bool   `json:"$truncated"`
						Bytes     int    `json:"bytes"`
						Preview   string `json:"preview"`
					} `json:"output"`
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil || !ev.Output.Truncated || ev.Output.Bytes < 1<<20 || len(ev.Output.Preview) < 1<<10 {
					t.Errorf("node.completed output %+v (%v): %.300s", ev.Output, err, line)
				}
			}
			if !found {
				t.Errorf("no node.completed for m[0].a: %.500s", out.String())
			}
		})
	}
}
