package engine

import (
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// mcpMany joins n copies of item, each # replaced by its index.
func mcpMany(item string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.ReplaceAll(item, "#", fmt.Sprint(i)))
	}
	return b.String()
}

// mcpAmpTool is the tool the hostile results answer for.
const mcpAmpTool = `{"name":"amp","inputSchema":{"type":"object"}}`

// mcpAmpRun runs a map of n tool nodes calling amp on a readsMCP server
// answering list and call, and returns its events and the heap's peak
// growth.
func mcpAmpRun(t *testing.T, n int, list, call string) (*recSink, uint64, time.Duration) {
	t.Helper()
	e, _ := svcEngine(t, nil)
	m := newReadsMCP(t, 0, false)
	m.list, m.call = list, call
	x := prepareReq(t, e, svcReq{
		workflow: fmt.Sprintf(`{"nodes":[{"id":"m","type":"map","with":{"items":"${{ 1..%d }}","nodes":[{"id":"c","type":"tool","onError":"continue","timeoutMs":20000,"with":{"toolset":"t","tool":"amp"}}]}}]}`, n),
		runtime:  `{"toolsets":[{"name":"t","url":"` + m.URL + `","timeoutMs":20000}]}`,
	}.String())
	s := &recSink{}
	var took time.Duration
	peak := readsPeak(func() {
		start := time.Now()
		x.Run(t.Context(), s)
		took = time.Since(start)
	})
	return s, peak, took
}

// Round 22: what the MCP SDK decodes is bounded by what it holds. It
// spends a quarter of a millisecond and tens of kilobytes on every tool of
// a tools/list page whatever the tool holds, and decodes each content
// block into a structure of its own: twenty thousand empty tools (58 KB)
// held 113 MB, sixteen nodes listing at once each had the list sent and
// decoded again (736 MB, seconds of CPU no deadline stopped), and sixteen
// results of 60,000 empty blocks held 300 MB. A listing is now counted
// before the SDK decodes it (at most toolsets.MaxTools), concurrent
// listings of a session wait for one, and an operation's responses are
// charged toolsets.ResponseCost against the in-flight cap until it
// returns.
func TestHostileMCPDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("serves megabytes to sixteen nodes at once")
	}
	tools := func(items string) string { return `{"tools":[` + mcpAmpTool + `,` + items + `]}` }
	only := `{"tools":[` + mcpAmpTool + `]}`
	tests := []struct {
		name, list, call string
		code             protocol.Code
		message          string
	}{
		{name: "20,000 empty tools", list: tools(mcpMany(`{}`, 20000)),
			code: protocol.CodeLimitExceeded, message: `toolset "t": tools/list lists more than 1000 tools`},
		{name: "5,000 tools with schemas", list: tools(mcpMany(`{"name":"t#","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`, 5000)),
			code: protocol.CodeLimitExceeded, message: "lists more than 1000 tools"},
		{name: "results of 60,000 empty content blocks", list: only, call: `{"content":[` + mcpMany(`{}`, 60000) + `]}`,
			code: protocol.CodeLimitExceeded, message: "replies being read at once would take more than"},
		{name: "results of 60,000 structured empty objects", list: only, call: `{"content":[],"structuredContent":{"v":[` + mcpMany(`{}`, 60000) + `]}}`,
			code: protocol.CodeLimitExceeded, message: "replies being read at once would take more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, peak, took := mcpAmpRun(t, 16, tt.list, tt.call)
			t.Logf("peak heap growth %.1f MB, took %v", float64(peak)/(1<<20), took.Round(time.Millisecond))
			matched := 0
			for i := range 16 {
				id := fmt.Sprintf("m[%d].c", i)
				f := s.nodeFailed(id)
				switch {
				case f == nil && tt.call != "":
					// read while no other result was in flight
				case f == nil:
					t.Errorf("%s: no node.failed, want %s", id, tt.code)
				case f.Error.Code == tt.code && strings.Contains(f.Error.Message, tt.message):
					matched++
				}
			}
			// The calls of a session that one call's failed read closed fail
			// TOOL_ERROR quoting it; at least one names the cap.
			if matched == 0 {
				t.Errorf("no node failed %s containing %q", tt.code, tt.message)
			}
			if peak > readsMaxPeak/4 {
				t.Errorf("the heap grew by %d MB, want under %d MB", peak>>20, readsMaxPeak>>22)
			}
		})
	}
}

// TestMCPDecodeCost holds toolsets.ResponseCost to what the MCP SDK holds
// while it decodes one operation's response: replies shaped to make it
// hold the most, one node at a time, must grow the heap no more than the
// Cost of their text. It fails when an SDK upgrade holds more. What the
// SDK spends on each tool of a listing is garbage (a decoder's buffers)
// bounded by toolsets.MaxTools, not held, and not measured here.
func TestMCPDecodeCost(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes hostile MCP responses")
	}
	tools := func(items string) string { return `{"tools":[` + mcpAmpTool + `,` + items + `]}` }
	only := `{"tools":[` + mcpAmpTool + `]}`
	tests := []struct{ name, list, call string }{
		{"list: a schema of 50,000 empty properties", tools(`{"name":"t","inputSchema":{"type":"object","properties":{` + mcpMany(`"p#":{}`, 50000) + `}}}`), ""},
		{"list: a schema of 60,000 empty allOf", tools(`{"name":"t","inputSchema":{"type":"object","allOf":[` + mcpMany(`{}`, 60000) + `]}}`), ""},
		{"call: 3 MB of text", only, `{"content":[{"type":"text","text":"` + strings.Repeat("A", 3<<20) + `"}]}`},
		{"call: 60,000 empty blocks", only, `{"content":[` + mcpMany(`{}`, 60000) + `]}`},
		{"call: 30,000 text blocks", only, `{"content":[` + mcpMany(`{"type":"text","text":""}`, 30000) + `]}`},
		{"call: 60,000 audience strings", only, `{"content":[{"type":"text","text":"x","annotations":{"audience":[` + mcpMany(`"user"`, 60000) + `]}}]}`},
		{"call: 60,000 structured empty objects", only, `{"content":[],"structuredContent":{"v":[` + mcpMany(`{}`, 60000) + `]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The collector at work after every 2% of growth, so that the
			// heap stays near what is live, as GOMEMLIMIT keeps it.
			defer debug.SetGCPercent(debug.SetGCPercent(2))
			// The least of three peaks: what the collector had not yet
			// reclaimed is counted too, more on a loaded machine.
			var peak uint64 = math.MaxUint64
			for range 3 {
				_, p, _ := mcpAmpRun(t, 1, tt.list, tt.call)
				peak = min(peak, p)
			}
			text := tt.list
			if tt.call != "" {
				text = tt.call
			}
			var m jsonweight.Meter
			_, _ = m.Write([]byte(text))
			c := toolsets.ResponseCost
			est := int64(len(text))*c.PerByte + m.Values()*c.PerValue
			t.Logf("%d bytes, %d values: peak %.1f MB, Cost %.1f MB", len(text), m.Values(), float64(peak)/(1<<20), float64(est)/(1<<20))
			// A quarter more for the collector's lag: an SDK that holds
			// half as much again fails.
			if int64(peak) > est*5/4 {
				t.Errorf("decoding %d bytes of %d values held %d bytes, more than toolsets.ResponseCost's %d", len(text), m.Values(), peak, est)
			}
		})
	}
}
