package engine

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Red team, round 3: a model prompt is an author value its SDK encodes.
// Control characters are one byte in the value the engine charges and six
// in the request body the SDK writes (\u0001), and nothing sizes that body
// before it is built: 8 parallel model nodes with a 15 MB prompt of \x01
// each (a 1.5 KB request) took the local server to 1.9 GB (openai), 2.1 GB
// (anthropic) and 1.2 GB (bedrock) under RUNNER_MEMORY_MB=512, and the
// encoding, which no deadline cancels, held the execution 9-57 s past a
// 5.5 s deadline, its terminal event never written. A model (and tool)
// request must be sized as written and charged before its SDK encodes it.
func TestHostileModelPromptEncoding(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes tens of megabytes")
	}
	srv := readsModel(t, func(_ int, w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	})
	anthropic := readsModel(t, func(_ int, w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	nodes := func(n, mb int) string {
		var b strings.Builder
		b.WriteString(`{"nodes":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":"m%d","type":"model","onError":"continue","with":{"prompt":"${{ repeat(repeat(input.c, 1000000), %d) }}"}}`, i, mb)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	model := func(provider, url string) string {
		return `{"models":[{"role":"general","provider":"` + provider + `","model":"m","apiKey":"sk-x","baseUrl":"` + url + `"}]}`
	}
	tests := []struct{ name, runtime, char string }{
		{"openai, control characters", model("openai", srv.URL+"/v1"), `"\u0001"`},
		{"openai, quotes", model("openai", srv.URL+"/v1"), `"\""`},
		{"anthropic, control characters", model("anthropic", anthropic.URL), `"\u0001"`},
		{"anthropic, U+2028", model("anthropic", anthropic.URL), `"\u2028"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			x := prepareReq(t, e, svcReq{workflow: nodes(4, 4), input: `{"c":` + tt.char + `}`, runtime: tt.runtime}.String())
			s := &recSink{}
			var took time.Duration
			peak := readsPeak(func() {
				start := time.Now()
				x.Run(t.Context(), s)
				took = time.Since(start)
			})
			t.Logf("peak heap growth %.1f MB, took %v", float64(peak)/(1<<20), took.Round(time.Millisecond))
			if peak > readsMaxPeak {
				t.Errorf("the heap grew by %d MB from 16 MB of prompts, want under %d MB: the SDK's encoding of the prompts is not sized before it is built", peak>>20, readsMaxPeak>>20)
			}
		})
	}
}
