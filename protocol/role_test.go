package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// node.started's role is written by hand as encoding/json would write it,
// and cut, as every text of an event, when the line is over its limit.
func TestNodeStartedRole(t *testing.T) {
	tests := []struct {
		name  string
		event NodeStarted
		limit int
	}{
		{"no role", NodeStarted{NodeID: "m", NodeType: "model", Attempt: 1}, 0},
		{"role", NodeStarted{NodeID: "m", NodeType: "model", Attempt: 2, Role: &RoleFallback{Requested: `cri"tic<é`, Used: "general"}}, 0},
		{"role and input", NodeStarted{NodeID: "m", NodeType: "agent", Attempt: 1, Role: &RoleFallback{Requested: "critic", Used: "general"}, Input: json.RawMessage(`{"prompt":"x"}`)}, 0},
		{"a huge role is cut", NodeStarted{NodeID: "m", NodeType: "model", Attempt: 1, Role: &RoleFallback{Requested: strings.Repeat("r", 5000), Used: "general"}}, 512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := newWriter(&buf, "x", nil, StreamOptions{MaxEventBytes: tt.limit})
			e := tt.event
			if err := send(w, &e); err != nil {
				t.Fatal(err)
			}
			line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			var back NodeStarted
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, line)
			}
			if (back.Role == nil) != (e.Role == nil) || (back.Role != nil && tt.limit == 0 && *back.Role != *e.Role) {
				t.Errorf("role %+v, want %+v: %s", back.Role, e.Role, line)
			}
			if tt.limit > 0 {
				if len(line) > tt.limit || back.Role == nil || back.Role.Used != "general" {
					t.Errorf("line of %d bytes (limit %d): %s", len(line), tt.limit, line)
				}
				return
			}
			// encoding/json without HTML escaping, as the stream writes.
			var enc bytes.Buffer
			je := json.NewEncoder(&enc)
			je.SetEscapeHTML(false)
			if err := je.Encode(&back); err != nil {
				t.Fatal(err)
			}
			if want := bytes.TrimSuffix(enc.Bytes(), []byte("\n")); !bytes.Equal(line, want) {
				t.Errorf("line\n %s\nwant\n %s", line, want)
			}
		})
	}
}
