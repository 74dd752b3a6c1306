package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Red team, round 3: an http node's query values are URL-encoded (a
// control character becomes %01, three bytes) into a URL nothing sizes:
// 8 http nodes whose query value is 15 MB of \x01 (a 1.5 KB request)
// took the local server to 865 MB under RUNNER_MEMORY_MB=512 and its
// execution 4 s past its deadline, without a terminal event. The same
// values in a JSON or form body are sized and bounded.
func TestHostileHTTPQueryEncoding(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes tens of megabytes")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	var b strings.Builder
	b.WriteString(`{"nodes":[`)
	for i := range 4 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"h%d","type":"http","onError":"continue","with":{"url":"%s/q","query":{"q":"${{ repeat(repeat(input.c, 1000000), 8) }}"}}}`, i, srv.URL)
	}
	b.WriteString(`]}`)
	e, _ := svcEngine(t, func(s *Services) {
		s.HTTP.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	x := prepareReq(t, e, svcReq{workflow: b.String(), input: `{"c":"\u0001"}`,
		runtime: `{"http":{"policy":{"allowPrivateNetwork":true}}}`}.String())
	s := &recSink{}
	var took time.Duration
	peak := readsPeak(func() {
		start := time.Now()
		x.Run(t.Context(), s)
		took = time.Since(start)
	})
	t.Logf("peak heap growth %.1f MB, took %v", float64(peak)/(1<<20), took.Round(time.Millisecond))
	if peak > readsMaxPeak {
		t.Errorf("the heap grew by %d MB from 32 MB of query values, want under %d MB: a query is not sized as it is written", peak>>20, readsMaxPeak>>20)
	}
}

// Red team, round 3: a host the secret is bound to echoes it back inside
// a larger base64 text (base64 of "pre" + secret + "post", as an echo of a
// header block would be). Decoded, the output holds the secret verbatim:
// redaction recognises the secret's own base64 forms, not the secret at
// another offset of a base64 text.
func TestHostileSecretInBase64Text(t *testing.T) {
	const secret = "S3cr3tValue-xyz_0123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := map[string]string{}
		for i, pre := range []string{"", "x", "xx", "X-K: "} {
			out[fmt.Sprint("b", i)] = base64.StdEncoding.EncodeToString([]byte(pre + r.Header.Get("X-K") + "\n"))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	e, _ := svcEngine(t, func(s *Services) {
		s.HTTP.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	s := svcRun(t, e, svcReq{
		workflow: `{"nodes":[{"id":"a","type":"http","with":{"url":"` + srv.URL + `/","headers":{"X-K":"pre${{ secrets.k }}post"}}}],"output":"${{ nodes.a.output.body }}"}`,
		runtime:  `{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"k":{"value":"` + secret + `","hosts":["127.0.0.1"]}}}}`,
		trace:    true,
	})
	r := s.result(t)
	out, _ := json.Marshal(r.Output)
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil || len(m) != 4 {
		t.Fatalf("output %s: want the 4 echoed texts (%v)", out, err)
	}
	for k, v := range m {
		d, err := base64.StdEncoding.DecodeString(v)
		if err == nil && strings.Contains(string(d), secret) {
			t.Errorf("output %s = %q decodes to %q: the secret, unredacted", k, v, d)
		}
	}
}
