package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/conformance"
	"github.com/runnerd/lambda-runner/engine"
	_ "github.com/runnerd/lambda-runner/engine/nodes" // the built-in node kinds
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "tok_conformance"

// acceptAll is a token source with no check at all.
type acceptAll struct{}

func (acceptAll) Verify(context.Context, string) error { return nil }

// runner is this repository's handler as the runner wires it: models,
// tools and consent advertised.
func runner(t *testing.T, edit func(*functions.Handler)) http.Handler {
	t.Helper()
	eng := engine.New(engine.DefaultLimits())
	h := &functions.Handler{
		Tokens: tokens.Static{Set: tokens.NewSet(token)},
		Engine: eng,
		Capabilities: protocol.Capabilities{
			Version:          protocol.Version,
			ProtocolVersions: []int{protocol.Version},
			Runner:           protocol.RunnerInfo{Name: "conformance-test", Version: "0"},
			NodeTypes:        eng.NodeTypes(),
			Runtime: protocol.RuntimeCapabilities{
				Models:   protocol.ModelCapabilities{Providers: []string{"anthropic", "openai"}, Roles: []string{}},
				Toolsets: protocol.ToolsetCapabilities{Transports: []string{"streamable-http"}},
				Consent:  "suspend", Workflows: true, HTTP: true,
			},
			Streaming:   protocol.Streaming{ContentType: protocol.ContentTypeNDJSON},
			Constraints: protocol.Constraints{MaxDurationMs: 60_000, MemoryMb: 512, MaxRequestBytes: 6 << 20, MaxNodes: 100},
		},
	}
	if edit != nil {
		edit(h)
	}
	return h
}

// check runs the suite against h over real TCP.
func check(t *testing.T, h http.Handler, timeout time.Duration) conformance.Report {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := &conformance.Checker{URL: srv.URL + "/", Token: token, Timeout: timeout}
	return c.Run(context.Background())
}

func TestRunnerPasses(t *testing.T) {
	rep := check(t, runner(t, nil), 30*time.Second)
	for _, r := range rep.Results {
		if r.Status != conformance.Pass {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
		}
	}
	if !rep.OK() || rep.Passed != len(conformance.Rules()) {
		t.Errorf("report %+v", rep)
	}
}

func TestInapplicableChecksSkip(t *testing.T) {
	rep := check(t, runner(t, func(h *functions.Handler) {
		h.Capabilities.Runtime.Consent = ""
		h.Capabilities.Runtime.Models.Providers = nil
	}), 30*time.Second)
	want := map[string]conformance.Status{"consent.suspends": conformance.Skip, "models.general-fallback": conformance.Skip}
	for _, r := range rep.Results {
		if w, ok := want[r.ID]; ok && r.Status != w {
			t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Reason, w)
		}
	}
	if !rep.OK() || rep.Skipped != 2 {
		t.Errorf("report %+v", rep)
	}
}

// rewrite runs h and lets edit change the whole answer before it is sent.
func rewrite(h http.Handler, edit func(r *http.Request, status int, hdr http.Header, body []byte) (int, []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		status, body := edit(r, rec.Code, w.Header(), rec.Body.Bytes())
		w.WriteHeader(status)
		w.Write(body)
	})
}

// rewriteRequest changes the request body before h sees it.
func rewriteRequest(h http.Handler, edit func([]byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Authorization") == "Bearer "+token {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(edit(b)))
		}
		h.ServeHTTP(w, r)
	})
}

func isStream(hdr http.Header) bool { return hdr.Get("Content-Type") == protocol.ContentTypeNDJSON }

func TestBrokenRunnersFailTheirRule(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) http.Handler
		broken  string // the check that must fail
		timeout time.Duration
	}{
		{"no auth", func(t *testing.T) http.Handler {
			good := runner(t, func(h *functions.Handler) { h.Tokens = acceptAll{} })
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Set("Authorization", "Bearer anything")
				good.ServeHTTP(w, r)
			})
		}, "auth.missing-token", 0},
		{"wrong tokens accepted", func(t *testing.T) http.Handler {
			good := runner(t, nil)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				good.ServeHTTP(w, r)
			})
		}, "auth.wrong-token", 0},
		{"body read before auth", func(t *testing.T) http.Handler {
			good := runner(t, nil)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					b, _ := io.ReadAll(r.Body)
					if _, err := protocol.DecodeRequest(b); err != nil {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(400)
						io.WriteString(w, `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"bad"}}`)
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(b))
				}
				good.ServeHTTP(w, r)
			})
		}, "auth.before-body", 0},
		{"capabilities without streaming", func(t *testing.T) http.Handler {
			return runner(t, func(h *functions.Handler) { h.Capabilities.Streaming.ContentType = "" })
		}, "capabilities.shape", 0},
		{"unsupported version accepted", func(t *testing.T) http.Handler {
			return rewriteRequest(runner(t, nil), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`{"version":2,`), []byte(`{"version":1,`), 1)
			})
		}, "invalid.unsupported-version", 0},
		{"accepted after a 400", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, _ http.Header, body []byte) (int, []byte) {
				if status == 400 {
					body = append(body, `{"version":1,"type":"accepted","executionId":"x","at":"t"}`+"\n"...)
				}
				return status, body
			})
		}, "invalid.unsupported-version", 0},
		{"400 with another code", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, _ http.Header, body []byte) (int, []byte) {
				return status, bytes.ReplaceAll(body, []byte("INVALID_EXECUTION"), []byte("BAD_REQUEST"))
			})
		}, "invalid.malformed", 0},
		{"unadvertised node type accepted", func(t *testing.T) http.Handler {
			return runner(t, func(h *functions.Handler) {
				h.Capabilities.NodeTypes = []string{"set", "map", "workflow", "model", "tool"}
			})
		}, "invalid.unadvertised-node-type", 0},
		{"stream as text/plain", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, hdr http.Header, body []byte) (int, []byte) {
				if isStream(hdr) {
					hdr.Set("Content-Type", "text/plain")
				}
				return status, body
			})
		}, "stream.content-type", 0},
		{"accepted not first", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, hdr http.Header, body []byte) (int, []byte) {
				if isStream(hdr) {
					lines := bytes.SplitAfter(body, []byte("\n"))
					lines[0], lines[1] = lines[1], lines[0]
					body = bytes.Join(lines, nil)
				}
				return status, body
			})
		}, "stream.accepted-first", 0},
		{"missing version", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, hdr http.Header, body []byte) (int, []byte) {
				if isStream(hdr) {
					body = bytes.Replace(body, []byte(`{"version":1,"type":"node.started"`), []byte(`{"type":"node.started"`), 1)
				}
				return status, body
			})
		}, "stream.version", 0},
		{"two terminal events", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, hdr http.Header, body []byte) (int, []byte) {
				if isStream(hdr) {
					lines := bytes.SplitAfter(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
					body = append(body, lines[len(lines)-1]...)
					body = append(body, '\n')
				}
				return status, body
			})
		}, "stream.one-terminal", 0},
		{"no terminal event", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, hdr http.Header, body []byte) (int, []byte) {
				if isStream(hdr) {
					lines := bytes.SplitAfter(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
					body = bytes.Join(lines[:len(lines)-1], nil)
				}
				return status, body
			})
		}, "stream.one-terminal", 0},
		{"connection left open after the terminal event", func(t *testing.T) http.Handler {
			good := runner(t, nil)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				good.ServeHTTP(w, r)
				if isStream(w.Header()) {
					w.(http.Flusher).Flush()
					<-r.Context().Done()
				}
			})
		}, "stream.closed-after-terminal", 3 * time.Second},
		{"failure ends in result", func(t *testing.T) http.Handler {
			return rewrite(runner(t, nil), func(_ *http.Request, status int, hdr http.Header, body []byte) (int, []byte) {
				if isStream(hdr) {
					body = bytes.Replace(body, []byte(`"type":"error"`), []byte(`"type":"result"`), 1)
				}
				return status, body
			})
		}, "stream.failure-error", 0},
		{"no general fallback", func(t *testing.T) http.Handler {
			return rewriteRequest(runner(t, nil), func(b []byte) []byte {
				return bytes.ReplaceAll(b, []byte(`"role":"general"`), []byte(`"role":"default"`))
			})
		}, "models.general-fallback", 0},
		{"consent ignored", func(t *testing.T) http.Handler {
			return rewriteRequest(runner(t, nil), func(b []byte) []byte {
				var m map[string]any
				if json.Unmarshal(b, &m) == nil && m["toolPolicies"] != nil {
					delete(m, "toolPolicies")
					b, _ = json.Marshal(m)
				}
				return b
			})
		}, "consent.suspends", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			rep := check(t, tt.handler(t), timeout)
			if rep.OK() {
				t.Fatalf("the suite passed a runner that breaks %s", tt.broken)
			}
			found := false
			for _, r := range rep.Results {
				if r.ID == tt.broken {
					found = true
					if r.Status != conformance.Fail || r.Reason == "" {
						t.Errorf("%s: %s %q, want a failure with a reason", r.ID, r.Status, r.Reason)
					}
				}
				if strings.Contains(r.Reason, token) {
					t.Errorf("%s: the reason quotes the token", r.ID)
				}
			}
			if !found {
				t.Errorf("no check %s", tt.broken)
			}
		})
	}
}

// What is not a runner stops the suite at once, with the reason, instead
// of failing every check for it.
func TestNotARunnerStopsTheSuite(t *testing.T) {
	tests := []struct {
		name, ct, body string
		status         int
		want           string
	}{
		{"404", "text/plain; charset=utf-8", "404 page not found", 404, "answered 404"},
		{"an emulator's 404", "", "", 404, "runnerctl bridge"},
		{"HTML", "text/html; charset=utf-8", "<!doctype html><title>hi</title>", 200, "an HTML page"},
		{"not JSON", "text/plain", "hello", 200, "not a JSON object"},
		{"JSON of another shape", "application/json", `{"status":"ok"}`, 200, "without protocolVersions"},
		{"an error of another shape", "application/json", `{"message":"Forbidden"}`, 403, "neither capabilities nor a protocol error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tt.ct != "" {
					w.Header().Set("Content-Type", tt.ct)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rep := (&conformance.Checker{URL: srv.URL, Token: "tok", Timeout: 5 * time.Second}).Run(context.Background())
			if rep.OK() || !strings.Contains(rep.Stopped, "not a Runner protocol v1 runner") || !strings.Contains(rep.Stopped, tt.want) ||
				len(rep.Results) != 0 || requests.Load() != 1 {
				t.Errorf("stopped %q, %d results, %d requests; want a stop naming %q after one request", rep.Stopped, len(rep.Results), requests.Load(), tt.want)
			}
		})
	}
	// Nothing listening: stopped too.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	if rep := (&conformance.Checker{URL: srv.URL, Token: "tok", Timeout: 5 * time.Second}).Run(context.Background()); !strings.Contains(rep.Stopped, "no runner answers") {
		t.Errorf("closed port: stopped %q", rep.Stopped)
	}
}
