package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Hostile bodies before acceptance, through the real handler: each is a 400
// naming the path at fault, within a stated time, and the runner then runs
// the next request.
func TestHostilePrepHandler(t *testing.T) {
	nested := func(depth, keyLen int) string {
		key := strings.Repeat("k", keyLen)
		return `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":` +
			strings.Repeat(`{"`+key+`":`, depth) + `1` + strings.Repeat(`}`, depth) + `}}]}}`
	}
	tests := []struct {
		name, body, path, message string
		within                    time.Duration
	}{
		{"2 MB nested 2,000 deep", nested(2000, 1000), "workflow.nodes[0].with.value.", "maxDepth", 5 * time.Second},
		{"nested arrays", `{"version":1,"workflow":{"nodes":[]},"input":` + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + `}`,
			"input[0]", "maxDepth", 5 * time.Second},
		{"duplicate permissions", `{"version":1,"workflow":{"nodes":[]},"permissions":[],"permissions":null}`,
			"permissions", "duplicate key", 2 * time.Second},
		{"duplicate deep in a node", `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":[{"b":{"c":1,"c":2}}]}}]}}`,
			"workflow.nodes[0].with.value[0].b.c", "duplicate key", 2 * time.Second},
		{"malformed", "{\"version\":1,\n\"workflow\":{,}}", "", "line 2, column 13", 2 * time.Second},
	}
	srv := startServer(t, newHandler(t, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.within)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+protocol.PathExecutions, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+goodToken)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("no answer within %v: %v", tt.within, err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if len(raw) > 16<<10 {
				t.Errorf("error body of %d bytes", len(raw))
			}
			var er protocol.ErrorResponse
			if err := json.Unmarshal(raw, &er); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range er.Error.Details {
				if strings.HasPrefix(d.Path, tt.path) && strings.Contains(d.Message, tt.message) {
					found = true
				}
			}
			if !found {
				t.Fatalf("details %.400v, want %s: …%s…", er.Error.Details, tt.path, tt.message)
			}
			// Still serving.
			next := post(t, srv, `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`)
			b, _ := io.ReadAll(next.Body)
			if !strings.Contains(string(b), `"status":"completed"`) {
				t.Fatalf("next request: %s", fmt.Sprint(string(b)))
			}
		})
	}
}
