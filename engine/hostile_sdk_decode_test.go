package engine

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Round 22: a model reply is bounded by what its SDK holds while decoding
// it. The provider SDKs decode a reply into structures of their own, a
// thousand bytes and more for each empty element of an array they type: a
// megabyte of empty choices made openai-go hold 320 MB, and one such
// reply ended a 512 MB function. A reply is now weighed as it is read, and
// charged what its SDK will hold (models' Costs) until its call returns:
// one that alone would hold more than the in-flight cap fails
// OUTPUT_TOO_LARGE before it is decoded, and replies that together would
// fail LIMIT_EXCEEDED.
func TestHostileSDKDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("serves tens of megabytes over loopback")
	}
	many := func(item string, n int) string {
		return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
	}
	emptyChoices := func(n int) string {
		return `{"id":"c","object":"chat.completion","model":"m","choices":[` + many(`{}`, n) + `]}`
	}
	openAI := readsModel(t, func(_ int, w http.ResponseWriter) { _, _ = io.WriteString(w, emptyChoices(350_000)) })
	fewer := readsModel(t, func(_ int, w http.ResponseWriter) { _, _ = io.WriteString(w, emptyChoices(25_000)) })
	anthropic := readsModel(t, func(_ int, w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"id":"m","type":"message","role":"assistant","model":"m","content":[`+many(`{}`, 350_000)+`],"usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	model := func(provider, url string) string {
		return `{"models":[{"role":"general","provider":"` + provider + `","model":"m","apiKey":"sk-x","baseUrl":"` + url + `"}]}`
	}
	node := `{"id":"x","type":"model","onError":"continue","with":{"prompt":"hi"}}`
	mapOf := `{"nodes":[{"id":"m","type":"map","with":{"items":"${{ 1..16 }}","nodes":[` + node + `]}}]}`
	tests := []struct {
		name, workflow, runtime string
		nodes                   int // m[0].x ... m[nodes-1].x, or x when 0
		// codes are those a node may fail with (whichever cap a reply
		// crosses first), with message; mayComplete lets a node whose reply
		// was read alone complete.
		codes       []protocol.Code
		message     string
		mayComplete bool
	}{{
		name:     "one openai reply of 1 MB of empty choices",
		workflow: `{"nodes":[` + node + `]}`, runtime: model("openai", openAI.URL+"/v1"),
		codes: []protocol.Code{protocol.CodeOutputTooLarge}, message: "model reply would take more than 67108864 bytes to decode",
	}, {
		name:     "16 openai replies of 1 MB of empty choices at once",
		workflow: mapOf, runtime: model("openai", openAI.URL+"/v1"), nodes: 16,
		codes: []protocol.Code{protocol.CodeOutputTooLarge, protocol.CodeLimitExceeded}, message: "would take more than 67108864 bytes to decode",
	}, {
		name:     "16 anthropic replies of 1 MB of empty content blocks at once",
		workflow: mapOf, runtime: model("anthropic", anthropic.URL), nodes: 16,
		codes: []protocol.Code{protocol.CodeOutputTooLarge, protocol.CodeLimitExceeded}, message: "would take more than 67108864 bytes to decode",
	}, {
		// Each is under the reply cap as decoded (1.6 MB), and costs the SDK
		// about 25 MB to decode: together they are over the in-flight cap.
		name:     "16 openai replies of 25,000 empty choices at once",
		workflow: mapOf, runtime: model("openai", fewer.URL+"/v1"), nodes: 16,
		codes: []protocol.Code{protocol.CodeLimitExceeded}, message: "replies being read at once would take more than 67108864 bytes to decode",
		mayComplete: true,
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
			ids := []string{"x"}
			if tt.nodes > 0 {
				ids = ids[:0]
				for i := range tt.nodes {
					ids = append(ids, fmt.Sprintf("m[%d].x", i))
				}
			}
			failed := 0
			for _, id := range ids {
				f := s.nodeFailed(id)
				switch {
				case f == nil && tt.mayComplete && s.index("node.completed", id) >= 0:
				case f == nil:
					t.Errorf("%s: no node.failed, want one of %v containing %q", id, tt.codes, tt.message)
				case !slices.Contains(tt.codes, f.Error.Code) || !strings.Contains(f.Error.Message, tt.message):
					t.Errorf("%s: node.failed %s %q, want one of %v containing %q", id, f.Error.Code, f.Error.Message, tt.codes, tt.message)
				default:
					failed++
				}
			}
			if failed == 0 {
				t.Error("no node failed: the cap did not act")
			}
			if peak > readsMaxPeak {
				t.Errorf("the heap grew by %d MB, want under %d MB", peak>>20, readsMaxPeak>>20)
			}
		})
	}
}
