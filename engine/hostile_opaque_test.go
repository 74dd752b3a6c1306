package engine

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Issue 18, class 1: a secret is opaque. Any expression that could tell a
// secret's characters by what it produces — a branch, a comparison, a
// slice, an index, a length, another function, or the URL a request goes
// to — is a 400 before acceptance naming the node, the field and the rule,
// whatever the expression names the secret through.
func TestSecretsAreOpaque(t *testing.T) {
	const runtime = `"runtime":{"http":{"secrets":{"k":"sixteen-char-key","u":"ada"}}}`
	body := func(nodes string) string {
		return `{"version":1,"workflow":{"nodes":` + nodes + `},` + runtime + `}`
	}
	pairs := `[{"p":0,"c":"s"},{"p":0,"c":"t"}]`
	for _, tt := range []struct {
		name  string
		nodes string
		path  string
		want  []string
	}{
		{
			name: "the reported oracle: a map spelling the secret through URL errors",
			nodes: `[{"id":"spell","type":"map","with":{"items":` + pairs + `,"nodes":[{"id":"probe","type":"http","onError":"continue",
				"with":{"url":"${{ secrets.k[item.p:item.p+1] == item.c ? 'ftp://api.example.com/' : 'https://api.example.com:0/' }}"}}]}}]`,
			path: "workflow.nodes[0].with.nodes[0].with.url", want: []string{`node "probe"`, "slices a secret", "Secrets are opaque"},
		},
		{
			name:  "a branch on a secret choosing a header",
			nodes: `[{"id":"h","type":"http","with":{"url":"https://api.example.com/","headers":{"X-Probe":"${{ secrets.k[0:1] == 's' ? 'a' : 'b' }}"}}}]`,
			path:  "workflow.nodes[0].with.headers.X-Probe", want: []string{`node "h"`, "slices a secret"},
		},
		{
			name:  "a length in the query",
			nodes: `[{"id":"h","type":"http","with":{"url":"https://api.example.com/","query":{"n":"${{ len(secrets.k) }}"}}}]`,
			path:  "workflow.nodes[0].with.query.n", want: []string{`node "h"`, "len()"},
		},
		{
			name:  "a comparison through let names in the body",
			nodes: `[{"id":"h","type":"http","with":{"url":"https://api.example.com/","method":"POST","body":{"x":"${{ let a = secrets.k; let b = 'p' + a; b > 'q' }}"}}}]`,
			path:  "workflow.nodes[0].with.body.x", want: []string{"operator >"},
		},
		{
			name:  "upper of a secret",
			nodes: `[{"id":"h","type":"http","with":{"url":"https://api.example.com/","headers":{"A":"x ${{ upper(secrets.k) }}"}}}]`,
			path:  "workflow.nodes[0].with.headers.A", want: []string{"upper()"},
		},
		{
			name:  "a secret host",
			nodes: `[{"id":"h","type":"http","with":{"url":"https://${{ secrets.k }}.example.com/"}}]`,
			path:  "workflow.nodes[0].with.url", want: []string{`node "h"`, "may not be part of with.url"},
		},
		{
			name:  "a secret path",
			nodes: `[{"id":"h","type":"http","with":{"url":"https://api.example.com/items/${{ secrets.k }}"}}]`,
			path:  "workflow.nodes[0].with.url", want: []string{"may not be part of with.url"},
		},
		{
			name:  "a secret port, through a condition",
			nodes: `[{"id":"h","type":"http","with":{"url":"${{ input.x ? 'https://a.example.com:' + secrets.k : 'https://a.example.com/' }}"}}]`,
			path:  "workflow.nodes[0].with.url", want: []string{"may not be part of with.url"},
		},
		{
			name:  "secrets outside the request fields",
			nodes: `[{"id":"s","type":"set","with":{"value":"${{ secrets.k }}"}}]`,
			path:  "workflow.nodes[0].with.value", want: []string{"headers, query and body"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			inv := prepareInvalid(t, e, body(tt.nodes))
			wantProblems(t, inv.Details, []problem{{tt.path, tt.want}}, []string{"sixteen-char-key"})
		})
	}
}

// TestSecretsPassedOnAreSent: what the rule allows reaches the host it is
// for: a Basic credential built with toBase64, a bearer token
// concatenated, a secret chosen by a condition that does not read it.
func TestSecretsPassedOnAreSent(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	e, _ := svcEngine(t, nil)
	body := `{"version":1,"input":{"x":true},"workflow":{"nodes":[{"id":"h","type":"http","with":{"url":"` + srv.URL + `/",
		"headers":{"Authorization":"Basic ${{ toBase64(secrets.u + ':' + secrets.k) }}","X-Token":"${{ input.x ? 'Bearer ' + secrets.k : '' }}"}}}]},
		"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"k":"s3cret","u":"ada"}}}}`
	x := prepareReq(t, e, body)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	x.Run(ctx, protocol.NewWriter(&out, testExecutionID, nil))
	select {
	case h := <-got:
		if a := h.Get("Authorization"); a != "Basic YWRhOnMzY3JldA==" {
			t.Errorf("Authorization %q", a)
		}
		if a := h.Get("X-Token"); a != "Bearer s3cret" {
			t.Errorf("X-Token %q", a)
		}
	default:
		t.Fatalf("nothing was sent:\n%s", out.String())
	}
	if strings.Contains(out.String(), "s3cret") || strings.Contains(out.String(), "YWRhOnMzY3JldA==") {
		t.Errorf("the stream holds the secret or its Basic form:\n%s", out.String())
	}
}
