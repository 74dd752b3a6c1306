package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// A finished run becomes a case that replays it with no service: its
// outside nodes pinned, its keys and secrets never written.
func TestFromRun(t *testing.T) {
	body := []byte(`{"version": 1, "workflow": {"nodes": [
	    {"id": "ask", "type": "model", "with": {"prompt": "hi"}},
	    {"id": "get", "type": "http", "onError": "continue", "with": {"url": "https://api.example.com/x", "headers": {"Authorization": "Bearer ${{ secrets.tok }}"}}},
	    {"id": "out", "type": "set", "needs": ["ask"], "with": {"value": "${{ nodes.ask.output.text }}!"}}],
	  "output": "${{ nodes.out.output }}"},
	  "input": {"a": 1},
	  "runtime": {"models": [{"role": "general", "provider": "` + providers()[0] + `", "model": "m", "apiKey": "sk-very-secret", "headers": {"X-Key": "hdr-secret"}}],
	              "http": {"secrets": {"tok": {"value": "tok-secret", "hosts": ["api.example.com"]}}}},
	  "permissions": ["model:general", "http:api.example.com"]}`)
	events := []protocol.Event{
		&protocol.NodeStarted{NodeID: "ask", NodeType: "model", Attempt: 1},
		&protocol.NodeCompleted{NodeID: "ask", NodeType: "model", Attempt: 1, Output: json.RawMessage(`{"text": "hello"}`)},
		&protocol.NodeFailed{NodeID: "get", NodeType: "http", Attempt: 1, Error: protocol.NodeError{Code: "HTTP_ERROR", Message: "503"}},
		&protocol.NodeCompleted{NodeID: "out", NodeType: "set", Attempt: 1, Output: json.RawMessage(`"hello!"`)},
		&protocol.Result{Status: protocol.StatusCompleted, Output: json.RawMessage(`"hello!"`)},
	}
	c, err := FromRun("saved", body, events)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-very-secret", "hdr-secret", "tok-secret"} {
		if bytes.Contains(c, []byte(secret)) {
			t.Errorf("the saved case holds %q:\n%s", secret, c)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "saved.test.json")
	if err := os.WriteFile(path, c, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := Run(context.Background(), &out, []string{path}, Options{}); code != ExitPass {
		t.Fatalf("exit %d:\n%s\n%s", code, out.String(), c)
	}
	if !strings.Contains(string(c), `"get": {`) || !strings.Contains(string(c), `"HTTP_ERROR"`) {
		t.Errorf("the http node is not pinned to its error:\n%s", c)
	}
}
