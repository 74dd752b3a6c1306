package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/protocol"
)

// busySandbox is a sandbox whose checks never come in time.
type busySandbox struct{}

func (busySandbox) Check(context.Context, string) error {
	return fmt.Errorf("%w: no sandbox worker came free for the syntax check in time", sandbox.ErrBusy)
}

func (busySandbox) EvalWith(context.Context, sandbox.Request, sandbox.EvalOptions) (*sandbox.Reply, error) {
	return nil, &sandbox.Error{Kind: sandbox.KindCrashed, Message: "not here"}
}

// A request whose code bodies the sandbox cannot check in time is not the
// author's fault: 503 UNAVAILABLE with Retry-After, before acceptance,
// never a 400; a request with a problem of its own still gets its 400.
func TestBusySandboxIs503(t *testing.T) {
	h := newHandler(t, nil)
	h.Engine.Services.Code = busySandbox{}
	srv := startServer(t, h)
	for _, tc := range []struct {
		name, body string
		status     int
		code       protocol.Code
	}{
		{"busy", `{"version":1,"workflow":{"nodes":[{"id":"c","type":"code","with":{"code":"return 1"}}]}}`, http.StatusServiceUnavailable, protocol.CodeUnavailable},
		{"busy and invalid", `{"version":1,"workflow":{"nodes":[{"id":"c","type":"code","with":{"code":"return 1"}},{"id":"s","type":"set","needs":["none"],"with":{"value":1}}]}}`, http.StatusBadRequest, protocol.CodeInvalidExecution},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+protocol.PathExecutions, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+goodToken)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var er protocol.ErrorResponse
			if err := json.Unmarshal(raw, &er); err != nil {
				t.Fatalf("%d %s: %v", resp.StatusCode, raw, err)
			}
			if resp.StatusCode != tc.status || er.Error.Code != tc.code {
				t.Errorf("%d %s, want %d %s", resp.StatusCode, raw, tc.status, tc.code)
			}
			if ra := resp.Header.Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (ra != "") {
				t.Errorf("Retry-After %q with status %d", ra, resp.StatusCode)
			}
			if tc.status == http.StatusServiceUnavailable && !strings.Contains(er.Error.Message, "workflow.nodes[0].with.code") {
				t.Errorf("message %q does not name the field", er.Error.Message)
			}
		})
	}
}
