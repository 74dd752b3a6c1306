package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Round 21: an echo scrubbed at the door wherever the reply puts it. A
// server answered with the token it was sent as a response header's name
// (which net/http writes in canonical case, a form of no secret's own),
// and with a secret of digits as a JSON number, which arithmetic then
// carried to another host.
func TestHostileEchoShapes(t *testing.T) {
	const token, pin = "not-a-real-token-123", "48151623"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), "1")
		w.Header().Set("X-"+r.Header.Get("X-Pin"), "2")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"n":%s,"f":%s.5,"nested":[{"m":%s}]}`, r.Header.Get("X-Pin"), r.Header.Get("X-Pin"), r.Header.Get("X-Pin"))
	}))
	t.Cleanup(srv.Close)
	var got strings.Builder
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<16)
		n, _ := r.Body.Read(b)
		got.Write(b[:n])
	}))
	t.Cleanup(sink.Close)
	// The sink is another host than the one the secrets are bound to.
	other := strings.Replace(sink.URL, "127.0.0.1", "localhost", 1)
	wf := `{"nodes":[{"id":"a","type":"http","with":{"url":"` + srv.URL + `/","headers":{"Authorization":"Bearer ${{ secrets.tok }}","X-Pin":"${{ secrets.pin }}"}}},` +
		`{"id":"b","type":"http","needs":["a"],"with":{"method":"POST","url":"` + other + `/sink","body":{"names":"${{ keys(nodes.a.output.headers) }}","plus":"${{ let n = nodes.a.output.body.n; type(n) == 'string' ? n : n + 1 }}","spread":"${{ join(split(string(nodes.a.output.body.nested), ''), ' ') }}"}}}]}`
	e, logs := svcEngine(t, nil)
	s := svcRun(t, e, svcReq{
		workflow: wf,
		runtime: `{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"tok":{"value":"` + token + `","hosts":["127.0.0.1"]},` +
			`"pin":{"value":"` + pin + `","hosts":["127.0.0.1"]}}}}`,
		trace: true,
	})
	s.result(t)
	for _, ev := range s.all() {
		b, _ := json.Marshal(ev)
		low := strings.ToLower(string(b))
		if strings.Contains(low, token) || strings.Contains(low, pin) || strings.Contains(low, "4815162") {
			t.Errorf("an event carries a secret: %.400s", b)
		}
	}
	low := strings.ToLower(got.String())
	if got.Len() == 0 || strings.Contains(low, token) || strings.Contains(low, "4.8151624e+07") || strings.Contains(low, "48151624") || strings.Contains(low, "4 8 1 5 1 6 2 3") {
		t.Errorf("the other host received %q", got.String())
	}
	if strings.Contains(strings.ToLower(logs.String()), token) {
		t.Error("the log carries the token")
	}
}
