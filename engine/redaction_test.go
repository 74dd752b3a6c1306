package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol/redact"

	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/protocol"
)

// TestRedaction runs workflows that try to get every kind of secret back
// out — HTTP secrets, model API keys and header values, toolset header
// values, the deployment's own model keys — through servers that echo them,
// traced, and scans the whole NDJSON stream as the protocol writer frames
// it, and every log line of the engine, for each secret: there must be
// none. Each case also checks that the secret did come back (the stream
// shows [REDACTED] where it was), so that it cannot pass by echoing
// nothing.
func TestRedaction(t *testing.T) {
	type env struct {
		echo  *svcEcho
		model *fakeModel
		tools *svcMCP
	}
	tests := []struct {
		name    string
		secrets []string
		// req builds the request from the servers.
		req func(env) svcReq
		// deployment, when set, is the deployment's model table.
		deployment func(env) []protocol.Model
		// check looks at what the servers received, when it matters.
		check func(t *testing.T, e env)
	}{
		{
			name:    "http secrets in headers, query, body and error",
			secrets: []string{"h3ader-s3cret", `q"uote-s3cret`, "b0dy-s3cret", "h0st-s3cret"},
			req: func(e env) svcReq {
				return svcReq{
					workflow: `{"nodes":[
						{"id":"echo","type":"http","with":{"method":"POST","url":"` + e.echo.URL + `/x",
							"query":{"k":"${{ secrets.body }}"},
							"headers":{"X-Token":"${{ secrets.header }}","X-Quote":"${{ secrets.quote }}"},
							"body":{"secret":"${{ secrets.body }}"}}},
						{"id":"status","type":"http","onError":"continue","with":{"url":"` + e.echo.URL + `/status/404","query":{"k":"${{ secrets.header }}"}}}]}`,
					runtime: `{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{
						"header":"h3ader-s3cret","quote":"q\"uote-s3cret",
						"body":{"value":"b0dy-s3cret","hosts":["127.0.0.1"]},"host":"h0st-s3cret"}}}`,
					trace: true,
				}
			},
		},
		{
			name:    "model key and header echoed in an error and a reply",
			secrets: []string{"sk-live-m0del-key", "org-h3ader-value"},
			req: func(e env) svcReq {
				return svcReq{
					workflow: `{"nodes":[
						{"id":"talk","type":"model","with":{"role":"echo","prompt":"say your key"}},
						{"id":"fail","type":"model","onError":"continue","with":{"role":"reject","prompt":"x"}}]}`,
					runtime: fmt.Sprintf(`{"models":[
						{"role":"echo","provider":"openai","model":"echo","apiKey":"sk-live-m0del-key","baseUrl":"%[1]s/v1","headers":{"X-Org":"org-h3ader-value"}},
						{"role":"reject","provider":"openai","model":"reject","apiKey":"sk-live-m0del-key","baseUrl":"%[1]s/v1","headers":{"X-Org":"org-h3ader-value"}}]}`, e.model.URL),
					trace: true,
				}
			},
		},
		{
			name:    "deployment model key",
			secrets: []string{"sk-deployment-k3y"},
			deployment: func(e env) []protocol.Model {
				return []protocol.Model{{Role: "general", Provider: "openai", Model: "echo", APIKey: "sk-deployment-k3y", BaseURL: e.model.URL + "/v1"}}
			},
			req: func(env) svcReq {
				return svcReq{workflow: `{"nodes":[{"id":"talk","type":"model","with":{"prompt":"say your key"}}]}`, trace: true}
			},
		},
		{
			name:    "toolset header echoed by a tool and to an agent",
			secrets: []string{"Bearer t00lset-t0ken"},
			req: func(e env) svcReq {
				return svcReq{
					workflow: `{"nodes":[
						{"id":"tool","type":"tool","onError":"continue","with":{"toolset":"secure","tool":"whoami"}},
						{"id":"agent","type":"agent","with":{"role":"agent","prompt":"who am I","toolsets":["secure"],"tools":["whoami"]}}]}`,
					runtime: `{"toolsets":[` + e.tools.toolset("secure", `,"headers":{"Authorization":"Bearer t00lset-t0ken"}`) + `],
						"models":[{"role":"agent","provider":"openai","model":"agent","baseUrl":"` + e.model.URL + `/v1"}]}`,
					trace: true,
				}
			},
			check: func(t *testing.T, e env) {
				// The tool's complaint reached the model redacted: a
				// toolset credential is not the model provider's business.
				for _, r := range e.model.requests() {
					b, _ := json.Marshal(r.body)
					if strings.Contains(string(b), "t00lset-t0ken") {
						t.Errorf("the model was sent the toolset's header value: %s", b)
					}
				}
				if len(e.tools.called()) != 2 {
					t.Errorf("whoami ran %d times, want 2 (tool node and agent)", len(e.tools.called()))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := env{echo: newSvcEcho(t), tools: newSvcMCP(t)}
			ev.model = newFakeModel(t, func(n int, body map[string]any, h http.Header) (int, string) {
				switch body["model"] {
				case "reject":
					return 401, fmt.Sprintf(`{"error":{"message":"Incorrect API key %s for org %s","type":"invalid_request_error"}}`,
						h.Get("Authorization"), h.Get("X-Org"))
				case "agent":
					if n%2 == 0 {
						return 200, toolCallReply([2]string{"secure__whoami", `{}`})
					}
					b, _ := json.Marshal(body["messages"])
					return 200, chatReply("agent", "the tool said: "+string(b), 1, 1)
				}
				return 200, chatReply("echo", fmt.Sprintf("my key is %s and org %s", h.Get("Authorization"), h.Get("X-Org")), 1, 1)
			})
			var table *models.Table
			if tt.deployment != nil {
				var err error
				if table, err = models.NewTable("RUNNER_MODELS", tt.deployment(ev)); err != nil {
					t.Fatal(err)
				}
			}
			e, logs := svcEngine(t, func(s *Services) { s.ModelTable = table })
			x := prepareReq(t, e, tt.req(ev).String())
			var stream bytes.Buffer
			x.Run(t.Context(), protocol.NewWriter(&stream, testExecutionID, nil))
			e.WaitClosed() // its log lines too

			all := stream.String() + "\n" + logs.String()
			for _, secret := range tt.secrets {
				esc, _ := json.Marshal(secret)
				for _, form := range []string{secret, string(esc[1 : len(esc)-1])} {
					if n := strings.Count(all, form); n > 0 {
						t.Errorf("secret %q appears %d times in the stream or the logs:\n%s", form, n, all)
					}
				}
			}
			if !strings.Contains(stream.String(), redact.Marker) {
				t.Errorf("no %s in the stream: the secrets never came back, the test proves nothing:\n%s", redact.Marker, stream.String())
			}
			if !strings.Contains(logs.String(), "permission decision") {
				t.Errorf("no log line: the logs were not captured:\n%s", logs.String())
			}
			if tt.check != nil {
				tt.check(t, ev)
			}
		})
	}
}

// Secrets outside an http node's request fields are refused before
// acceptance, and the refusal does not quote them.
func TestRedactionSecretsOutsideHTTP(t *testing.T) {
	tests := []struct{ name, wf string }{
		{"set", `{"nodes":[{"id":"s","type":"set","with":{"value":"${{ secrets.k }}"}}]}`},
		{"fail", `{"nodes":[{"id":"f","type":"fail","with":{"message":"${{ secrets.k }}"}}]}`},
		{"model", `{"nodes":[{"id":"m","type":"model","with":{"prompt":"${{ secrets.k }}"}}]}`},
		{"when", `{"nodes":[{"id":"w","type":"set","when":"secrets.k == 'x'","with":{"value":1}}]}`},
		{"output", `{"nodes":[{"id":"o","type":"set","with":{"value":1}}],"output":{"leak":"${{ secrets.k }}"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			inv := prepareInvalid(t, e, svcReq{
				workflow: tt.wf,
				runtime:  `{"models":[{"role":"general","provider":"openai","model":"m"}],"http":{"secrets":{"k":"v3ry-s3cret"}}}`,
			}.String())
			b, _ := json.Marshal(inv.Response())
			if !strings.Contains(string(b), "secrets") {
				t.Errorf("refusal %s does not say why", b)
			}
			if strings.Contains(string(b), "v3ry-s3cret") {
				t.Errorf("refusal %s quotes the secret", b)
			}
		})
	}
}
