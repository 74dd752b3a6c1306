//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/protocol"
)

// heapObjects is the heap's live and unswept objects, as runtime/metrics
// sees them.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakDuring runs f with the collector at work after every 2% of growth,
// so that the heap stays near what is live, and returns its peak growth
// over what it held before, sampled without pause.
func peakDuring(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(2))
	runtime.GC()
	base := heapObjects()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			peak.Store(max(peak.Load(), heapObjects()))
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return max(peak.Load(), base) - base
}

// TestReplyCost holds each provider's Cost to what its SDK holds while it
// decodes a reply: replies shaped to make it hold the most (many empty
// elements of each array it decodes into structures of its own, long
// strings, escapes, tool inputs) are decoded, and the heap's peak growth
// must stay within Cost's estimate of the text. It fails when an SDK
// upgrade holds more; the Costs must then grow.
func TestReplyCost(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes replies into hundreds of megabytes")
	}
	awsTestEnv(t)
	const size = 256 << 10
	many := func(item string) string {
		return strings.TrimSuffix(strings.Repeat(item+",", size/(len(item)+1)), ",")
	}
	long := strings.Repeat("A", size)
	openAI := func(message string) string {
		return `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",` + message + `}}]}`
	}
	anthropic := func(content string) string {
		return `{"id":"m","type":"message","role":"assistant","model":"m","content":[` + content + `],"usage":{"input_tokens":1,"output_tokens":1}}`
	}
	bedrock := func(content string) string {
		return `{"output":{"message":{"role":"assistant","content":[` + content + `]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`
	}
	tests := []struct{ provider, name, body string }{
		{ProviderOpenAI, "long content", openAI(`"content":"` + long + `"`)},
		{ProviderOpenAI, "escapes", openAI(`"content":"` + strings.Repeat(`\u00e9`, size/6) + `"`)},
		{ProviderOpenAI, "long arguments", openAI(`"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"` + long + `"}}]`)},
		{ProviderOpenAI, "empty choices", `{"id":"c","object":"chat.completion","model":"m","choices":[` + many(`{}`) + `]}`},
		{ProviderOpenAI, "full choices", `{"id":"c","object":"chat.completion","model":"m","choices":[` + many(`{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}`) + `]}`},
		{ProviderOpenAI, "empty tool calls", openAI(`"content":"x","tool_calls":[` + many(`{}`) + `]`)},
		{ProviderOpenAI, "full tool calls", openAI(`"tool_calls":[` + many(`{"id":"","type":"function","function":{"name":"","arguments":""}}`) + `]`)},
		{ProviderOpenAI, "annotations", openAI(`"content":"x","annotations":[` + many(`{"type":"url_citation","url_citation":{"url":"","title":"","start_index":0,"end_index":0}}`) + `]`)},
		{ProviderOpenAI, "unknown member", `{"id":"c","object":"chat.completion","model":"m","x":[` + many(`{}`) + `],"choices":[{"index":0,"message":{"role":"assistant","content":"x"}}]}`},
		{ProviderAnthropic, "long text", anthropic(`{"type":"text","text":"` + long + `"}`)},
		{ProviderAnthropic, "empty blocks", anthropic(many(`{}`))},
		{ProviderAnthropic, "text blocks", anthropic(many(`{"type":"text","text":""}`))},
		{ProviderAnthropic, "tool_use blocks", anthropic(many(`{"type":"tool_use","id":"","name":"","input":{}}`))},
		{ProviderAnthropic, "citations", anthropic(`{"type":"text","text":"x","citations":[` + many(`{}`) + `]}`)},
		{ProviderAnthropic, "tool input", anthropic(`{"type":"tool_use","id":"a","name":"f","input":{"a":[` + many(`{}`) + `]}}`)},
		{ProviderBedrock, "long text", bedrock(`{"text":"` + long + `"}`)},
		{ProviderBedrock, "empty blocks", bedrock(many(`{}`))},
		{ProviderBedrock, "text blocks", bedrock(many(`{"text":""}`))},
		{ProviderBedrock, "toolUse blocks", bedrock(many(`{"toolUse":{"toolUseId":"","name":"","input":{}}}`))},
		{ProviderBedrock, "tool input objects", bedrock(`{"toolUse":{"toolUseId":"a","name":"f","input":{"a":[` + many(`{}`) + `]}}}`)},
		{ProviderBedrock, "tool input numbers", bedrock(`{"toolUse":{"toolUseId":"a","name":"f","input":{"a":[` + many(`1`) + `]}}}`)},
	}
	costs := map[string]struct{ perByte, perValue int64 }{
		ProviderOpenAI:    {openAIReplyCost.PerByte, openAIReplyCost.PerValue},
		ProviderAnthropic: {anthropicReplyCost.PerByte, anthropicReplyCost.PerValue},
		ProviderBedrock:   {bedrockReplyCost.PerByte, bedrockReplyCost.PerValue},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.provider == ProviderBedrock, reply{body: tt.body})
			base := srv.URL
			if tt.provider == ProviderOpenAI {
				base += "/v1"
			}
			p, err := (&Clients{HTTPClient: srv.client(t), TrustedEndpoints: []string{srv.URL}, MaxRetries: -1}).Provider(context.Background(),
				protocol.Model{Provider: tt.provider, Model: "m", APIKey: "k", BaseURL: base})
			if err != nil {
				t.Fatal(err)
			}
			// Once first, so that what the SDK builds once is not counted.
			_, _ = p.Complete(context.Background(), conversation)
			// The least of three peaks: what the collector had not yet
			// reclaimed is counted too, more on a loaded machine.
			peak := peakDuring(func() { _, err = p.Complete(context.Background(), conversation) })
			for range 2 {
				peak = min(peak, peakDuring(func() { _, err = p.Complete(context.Background(), conversation) }))
			}
			if err != nil && !strings.Contains(err.Error(), "malformed") {
				t.Logf("Complete: %v", err) // decoded, then found wanting
			}
			var m jsonweight.Meter
			_, _ = m.Write([]byte(tt.body))
			c := costs[tt.provider]
			est := int64(len(tt.body))*c.perByte + m.Values()*c.perValue
			t.Logf("%d bytes, %d values: peak %.1f MB, Cost %.1f MB", len(tt.body), m.Values(), float64(peak)/(1<<20), float64(est)/(1<<20))
			// A quarter more for the collector's lag: an SDK that holds
			// half as much again fails.
			if int64(peak) > est*5/4 {
				t.Errorf("decoding %d bytes of %d values held %d bytes, more than its Cost, %d", len(tt.body), m.Values(), peak, est)
			}
		})
	}
}
