package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/authorjson"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/protocol"
)

// What the SDKs write of a model request or a tool's arguments is sized as
// encoding/json writes it with HTML escaping on, and charged before the
// call: a prompt of '<' is six bytes a character on the wire.
func TestSentSizes(t *testing.T) {
	for _, s := range []string{"", "plain", "<>&", strings.Repeat("<", 1000), "a\u2028b\x01\"\\\n", "\xff<"} {
		b, _ := json.Marshal(s) // HTML escaping on, as the SDKs encode
		if got := authorjson.SentStringSize(s); got != int64(len(b)) {
			t.Errorf("SentStringSize(%q) = %d, encoding/json writes %d", s, got, len(b))
		}
	}
	for _, v := range []any{
		map[string]any{"q": strings.Repeat("&", 100), "<k>": []any{"<", 1.5, true, nil, map[string]any{"x": ">"}}},
		[]any{"a", "b<"},
		"<<<",
	} {
		b, _ := json.Marshal(v)
		n, err := sentValueSize("v", v, 1<<20)
		// At least what is written (a boolean is counted as "false").
		if err != nil || n < int64(len(b)) || n > int64(len(b))+8 {
			t.Errorf("sentValueSize(%v) = %d, %v; encoding/json writes %d", v, n, err, len(b))
		}
	}
	req := models.Request{System: "<sys>", Messages: []models.Message{{Role: "user", Content: strings.Repeat("<", 4096)}}}
	if n := modelRequestSize(req); n < 6*4096 {
		t.Errorf("modelRequestSize = %d, less than the prompt's %d escaped bytes", n, 6*4096)
	}
}

// Sixteen model nodes whose prompt is megabytes of characters HTML
// escaping writes six times over: refused in-band before their requests
// are written once the budget is held, never encoded uncharged; one such
// node alone runs.
func TestHostileModelRequestCharged(t *testing.T) {
	for _, ch := range []string{"<", ">", "&"} {
		t.Run(fmt.Sprintf("%q", ch), func(t *testing.T) {
			f := newFakeModel(t, func(int, map[string]any, http.Header) (int, string) { return 200, chatReply("g", "ok", 1, 1) })
			e, _ := svcEngine(t, nil)
			// 4 MB of it in the input, a prompt of it in every node.
			input := `{"s":"` + strings.Repeat(ch, 4<<20) + `"}`
			var nodes []string
			for i := range 16 {
				nodes = append(nodes, fmt.Sprintf(`{"id":"m%d","type":"model","with":{"prompt":"${{ input.s }}"}}`, i))
			}
			s := svcRun(t, e, svcReq{
				workflow: `{"id":"w","nodes":[` + strings.Join(nodes, ",") + `]}`,
				input:    input,
				runtime:  `{"models":[` + f.entry("general", "g") + `]}`,
			})
			fe := s.failure(t)
			if !bytes.Contains([]byte(fe.Error.Message), []byte("memory budget")) {
				t.Fatalf("terminal %+v, want a memory budget refusal", fe.Error)
			}
			var refused int
			for _, ev := range s.all() {
				if nf, ok := ev.(*protocol.NodeFailed); ok && nf.Error.Code == protocol.CodeMemoryBudgetExceeded &&
					strings.Contains(nf.Error.Message, "the model request") {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("no node refused its model request on the budget")
			}
		})
	}
	t.Run("one node runs", func(t *testing.T) {
		f := newFakeModel(t, func(int, map[string]any, http.Header) (int, string) { return 200, chatReply("g", "ok", 1, 1) })
		e, _ := svcEngine(t, nil)
		s := svcRun(t, e, svcReq{
			workflow: `{"id":"w","nodes":[{"id":"m","type":"model","with":{"prompt":"${{ input.s }}"}}]}`,
			input:    `{"s":"` + strings.Repeat("<", 1<<20) + `"}`,
			runtime:  `{"models":[` + f.entry("general", "g") + `]}`,
		})
		if r := s.result(t); r.Status != protocol.StatusCompleted {
			t.Fatalf("status %s", r.Status)
		}
	})
}
