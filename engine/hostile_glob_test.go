package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/protocol"
)

// Round 21: permission patterns are matched in linear time, are at most
// glob.MaxPattern bytes, and a resource too long to match is denied. A
// pattern "workflow:*aaa…ab" of 150,000 bytes against a child workflow id
// of 300,000 a's took 31 s of CPU that neither the client leaving nor the
// deadline could stop.
func TestHostilePermissionPatterns(t *testing.T) {
	rep := strings.Repeat
	request := func(id string, perms ...string) string {
		quoted := make([]string, len(perms))
		for i, p := range perms {
			quoted[i] = `"` + p + `"`
		}
		return fmt.Sprintf(`{"version":1,"workflow":{"nodes":[{"id":"call","type":"workflow","with":{"workflow":%q}}]},`+
			`"runtime":{"workflows":[{"id":%q,"nodes":[{"id":"x","type":"set","with":{"value":1}}]}]},"permissions":[%s]}`,
			id, id, strings.Join(quoted, ","))
	}
	long := rep("a", 300_000)
	near := "workflow:*" + rep("a", glob.MaxPattern-len("workflow:*")-1) + "b"
	t.Run("a pattern past the bound is refused", func(t *testing.T) {
		_, err := New(DefaultLimits()).PrepareBody([]byte(request(long, "workflow:*"+rep("a", 150_000)+"b")))
		var inv *protocol.Invalid
		if !errors.As(err, &inv) || len(inv.Details) != 1 || inv.Details[0].Path != "permissions[0]" ||
			!strings.Contains(inv.Details[0].Message, fmt.Sprintf("more than the %d", glob.MaxPattern)) {
			t.Fatalf("got %v", err)
		}
	})
	for _, tt := range []struct {
		name, id string
		perms    []string
		want     protocol.ExecutionStatus
	}{
		{"a long id against the longest near misses", long, slices.Repeat([]string{near}, glob.MaxList), protocol.StatusFailed},
		{"a long id that a star allows is still denied", long, []string{"workflow:*"}, protocol.StatusFailed},
		{"an id at the bound, the longest near misses", rep("a", 4000), slices.Repeat([]string{near}, glob.MaxList), protocol.StatusFailed},
		{"an id at the bound, allowed", rep("a", 4000), append(slices.Repeat([]string{near}, glob.MaxList-1), "workflow:a*"), protocol.StatusCompleted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x, err := New(DefaultLimits()).PrepareBody([]byte(request(tt.id, tt.perms...)))
			if err != nil {
				t.Fatalf("refused: %.300v", err)
			}
			s := &recSink{}
			start := time.Now()
			sum := x.Run(t.Context(), s)
			if took := time.Since(start); took > costSlack(time.Second) {
				t.Errorf("ran %v", took)
			}
			if sum.Status != tt.want {
				t.Errorf("ended %s, want %s", sum.Status, tt.want)
			}
		})
	}
}

// Round 21: host patterns with an empty label match no host; every list
// that holds them refuses them before acceptance, naming the entry.
func TestHostPatternsEmptyLabels(t *testing.T) {
	for _, tt := range []struct{ name, extra, path string }{
		{"permissions", `"permissions":["http:a..b"]`, "permissions[0]"},
		{"permissions, a dot alone", `"permissions":["http:."]`, "permissions[0]"},
		{"grants", `"authorization":{"grants":["http:.example.com"]}`, "authorization.grants[0].resource"},
		{"allowHosts", `"runtime":{"http":{"policy":{"allowHosts":["api..example.com"]}}}`, "runtime.http.policy.allowHosts[0]"},
		{"a secret's hosts", `"runtime":{"http":{"secrets":{"k":{"value":"v","hosts":["a..b"]}}}}`, "runtime.http.secrets.k.hosts[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]},` + tt.extra + `}`
			_, err := New(DefaultLimits()).PrepareBody([]byte(body))
			var inv *protocol.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want a 400", err)
			}
			found := false
			for _, d := range inv.Details {
				found = found || d.Path == tt.path && strings.Contains(d.Message, "empty label")
			}
			if !found {
				t.Errorf("no detail at %s names the empty label: %v", tt.path, inv.Details)
			}
		})
	}
}
