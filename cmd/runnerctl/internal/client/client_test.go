package client_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/client"
	"github.com/runnerd/lambda-runner/protocol"
)

func TestBuildRequest(t *testing.T) {
	tests := []struct {
		name, src, input string
		want             string // "" when an error is expected
		wantErr          string
	}{
		{"whole request is sent byte for byte", `{"version":1, "workflow":{"nodes":[]}}`, "", `{"version":1, "workflow":{"nodes":[]}}`, ""},
		{"whole request, input replaced", `{"version":1,"workflow":{"nodes":[]},"input":1}`, `2`, `{"input":2,"version":1,"workflow":{"nodes":[]}}`, ""},
		{"bare document", `{"nodes":[]}`, "", `{"version":1,"workflow":{"nodes":[]}}`, ""},
		{"bare document with input", ` {"nodes":[]} `, `{"a":1}`, `{"input":{"a":1},"version":1,"workflow":{"nodes":[]}}`, ""},
		{"not JSON", `nodes`, "", "", "not a JSON object"},
		{"neither", `{"id":"x"}`, "", "", "neither an execution request"},
		{"input not JSON", `{"nodes":[]}`, `{`, "", "--input is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in []byte
			if tt.input != "" {
				in = []byte(tt.input)
			}
			got, err := client.BuildRequest([]byte(tt.src), in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		line string
		want any
	}{
		{`{"version":1,"type":"accepted","executionId":"e","at":"t"}`, &protocol.Accepted{}},
		{`{"version":1,"type":"node.failed","executionId":"e","at":"t","nodeId":"a","error":{"code":"X","message":"m"},"retrying":true}`, &protocol.NodeFailed{}},
		{`{"version":1,"type":"result","executionId":"e","at":"t","status":"suspended","suspended":[{"nodeId":"a"}]}`, &protocol.Result{}},
		{`{"version":1,"type":"error","executionId":"e","at":"t","error":{"code":"EXECUTION_FAILED","message":"m"}}`, &protocol.Error{}},
	} {
		ev, err := client.Decode([]byte(tt.line))
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if fmt.Sprintf("%T", ev) != fmt.Sprintf("%T", tt.want) {
			t.Errorf("%s: decoded as %T, want %T", tt.line, ev, tt.want)
		}
	}
	for _, bad := range []string{`nope`, `{"type":"node.unknown"}`, `{"type":"node.started","attempt":"x"}`} {
		if _, err := client.Decode([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// FuzzDecode: no line makes Decode or BuildRequest panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"type":"result","executionId":"e","at":"t","status":"completed","output":{}}`))
	f.Add([]byte(`{"nodes":[]}`))
	f.Add([]byte(`{"workflow":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		client.Decode(b)
		client.BuildRequest(b, nil)
		client.BuildRequest(b, []byte(`1`))
	})
}
