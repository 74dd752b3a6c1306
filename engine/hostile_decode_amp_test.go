package engine

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// ampJSON is a JSON array of about n bytes of empty objects: what decoding
// multiplies most (twenty-odd times by lang.SizeOf, more on the heap).
func ampJSON(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("{},", n/3), ",") + "]"
}

// Round 21: a reply is bounded by what it decodes to, before it is
// decoded. Its bytes were bounded as they were read, but decoding
// multiplied them: sixteen http bodies of a megabyte of "{}," at once, or
// a few MCP results of 4 MB of them, took the runner past 1 GB and out of
// memory before any output cap looked at them. Each node fails
// OUTPUT_TOO_LARGE and the heap stays near the bytes read.
func TestHostileDecodedReplies(t *testing.T) {
	if testing.Short() {
		t.Skip("serves tens of megabytes over loopback")
	}
	body := ampJSON(1 << 20)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(web.Close)
	model := readsModel(t, func(_ int, w http.ResponseWriter) {
		_, _ = io.WriteString(w, chatReply("m", ampJSON(3<<20), 1, 1))
	})
	argsModel := readsModel(t, func(n int, w http.ResponseWriter) {
		if n > 0 {
			_, _ = io.WriteString(w, chatReply("m", "done", 1, 1))
			return
		}
		_, _ = io.WriteString(w, toolCallReply([2]string{"t__add", `{"a":1,"b":2,"c":` + ampJSON(3<<20) + `}`}))
	})
	mcpSrv := newReadsMCP(t, 0, false)
	mcpSrv.amp = ampJSON(4 << 20)
	models := func(m *httptest.Server) string {
		return `"models":[{"role":"general","provider":"openai","model":"m","apiKey":"sk-x","baseUrl":"` + m.URL + `/v1"}]`
	}
	mapOf := func(node string) string {
		return `{"nodes":[{"id":"m","type":"map","with":{"items":"${{ 1..16 }}","nodes":[` + node + `]}}]}`
	}
	tests := []struct {
		name, workflow, runtime, node, message string
		// anyCode: the SDK hands one call's failed read to the calls that
		// share its session, which fail TOOL_ERROR quoting it.
		anyCode bool
	}{{
		name:     "16 http bodies of 1 MiB of {} at once",
		workflow: mapOf(`{"id":"h","type":"http","onError":"continue","with":{"url":"` + web.URL + `/json","responseType":"json"}}`),
		runtime:  `{"http":{"policy":{"allowPrivateNetwork":true}}}`,
		node:     "m[0].h", message: "would decode to about",
	}, {
		name:     "16 http bodies typed by their content type",
		workflow: mapOf(`{"id":"h","type":"http","onError":"continue","with":{"url":"` + web.URL + `/json"}}`),
		runtime:  `{"http":{"policy":{"allowPrivateNetwork":true}}}`,
		node:     "m[0].h", message: "would decode to about",
	}, {
		name:     "16 MCP results of 4 MB of {} at once",
		workflow: mapOf(`{"id":"c","type":"tool","onError":"continue","timeoutMs":10000,"with":{"toolset":"t","tool":"amp"}}`),
		runtime:  `{"toolsets":[{"name":"t","url":"` + mcpSrv.URL + `","timeoutMs":10000}]}`,
		// Over the reply cap as decoded, or over the in-flight cap as the
		// SDK would hold them, whichever a result crosses first.
		node: "m[0].c", message: "decode", anyCode: true,
	}, {
		name:     "one MCP result of 4 MB of {}",
		workflow: `{"nodes":[{"id":"c","type":"tool","timeoutMs":10000,"with":{"toolset":"t","tool":"amp"}}]}`,
		runtime:  `{"toolsets":[{"name":"t","url":"` + mcpSrv.URL + `","timeoutMs":10000}]}`,
		node:     "c", message: "tool result exceeds 4259840 bytes (as decoded)",
	}, {
		name:     "a model's JSON reply of 3 MB of {}",
		workflow: `{"nodes":[{"id":"n","type":"model","with":{"prompt":"hi","json":true}}]}`,
		runtime:  `{` + models(model) + `}`,
		node:     "n", message: "would decode to about",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			x := prepareReq(t, e, svcReq{workflow: tt.workflow, runtime: tt.runtime}.String())
			s := &recSink{}
			var took time.Duration
			peak := readsPeak(func() {
				start := time.Now()
				x.Run(t.Context(), s)
				took = time.Since(start)
			})
			t.Logf("peak heap growth %.1f MB, took %v", float64(peak)/(1<<20), took.Round(time.Millisecond))
			f := s.nodeFailed(tt.node)
			if f == nil || f.Error.Code != protocol.CodeOutputTooLarge && !tt.anyCode || !strings.Contains(f.Error.Message, tt.message) {
				t.Errorf("node.failed of %s = %+v, want OUTPUT_TOO_LARGE containing %q", tt.node, f, tt.message)
			}
			if peak > readsMaxPeak {
				t.Errorf("the heap grew by %d MB, want under %d MB", peak>>20, readsMaxPeak>>20)
			}
		})
	}
	// The agent's tool call arguments are bounded the same way: the call is
	// answered as bad arguments, never decoded.
	t.Run("an agent's tool call arguments of 3 MB of {}", func(t *testing.T) {
		e, _ := svcEngine(t, nil)
		addSrv := newReadsMCP(t, 0, false)
		x := prepareReq(t, e, svcReq{
			workflow: `{"nodes":[{"id":"n","type":"agent","with":{"prompt":"go","toolsets":["t"],"maxSteps":4}}]}`,
			runtime:  `{"toolsets":[` + addSrv.toolset() + `],` + models(argsModel) + `}`,
		}.String())
		s := &recSink{}
		peak := readsPeak(func() { x.Run(t.Context(), s) })
		t.Logf("peak heap growth %.1f MB", float64(peak)/(1<<20))
		if peak > readsMaxPeak {
			t.Errorf("the heap grew by %d MB, want under %d MB", peak>>20, readsMaxPeak>>20)
		}
	})
}
