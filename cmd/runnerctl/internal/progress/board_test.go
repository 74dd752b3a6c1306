package progress_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/progress"
	"github.com/runnerd/lambda-runner/protocol"
)

func TestBoardNestsAndTracksAttempts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &progress.Board{Now: func() time.Time { return now }}
	b.Expect("each", "map")
	b.Expect("review", "workflow")
	b.Expect("later", "set")
	for _, ev := range []protocol.Event{
		&protocol.NodeStarted{NodeID: "each", NodeType: "map", Attempt: 1},
		&protocol.NodeStarted{NodeID: "each[1].tag", NodeType: "set", Attempt: 1},
		&protocol.NodeFailed{NodeID: "each[1].tag", NodeType: "set", Attempt: 1, DurationMs: 5, Error: protocol.NodeError{Code: "TIMEOUT", Message: "slow"}, Retrying: true},
		&protocol.NodeStarted{NodeID: "each[1].tag", NodeType: "set", Attempt: 2},
		&protocol.NodeCompleted{NodeID: "each[1].tag", NodeType: "set", Attempt: 2, DurationMs: 1500},
		&protocol.NodeStarted{NodeID: "each[0].tag", NodeType: "set", Attempt: 1},
		&protocol.PermissionDecision{NodeID: "review", Action: "workflow.run", Resource: "lint", Decision: "allow", Source: "default"},
		&protocol.NodeStarted{NodeID: "review", NodeType: "workflow", Attempt: 1},
		&protocol.NodeSuspended{NodeID: "review.page", NodeType: "tool", Reason: "consent", Request: protocol.ConsentRequest{Action: "tool.call", Resource: "p/q"}},
	} {
		b.Apply(ev)
	}
	now = now.Add(2 * time.Second)
	want := []string{
		"… each (map) running · attempt 1 · 2s",
		"  [1]",
		"    ✓ tag (set) completed · attempt 2 · 1.5s",
		"  [0]",
		"    … tag (set) running · attempt 1 · 2s",
		"… review (workflow) running · attempt 1 · 2s",
		"    permission allow workflow.run lint: default",
		"  ⏸ page (tool) suspended · needs consent: tool.call p/q",
		"· later (set) waiting",
	}
	if got := b.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	b.Finish()
	if got := b.Lines(); got[len(got)-1] != "- later (set) skipped" || !strings.Contains(got[0], "failed") {
		t.Errorf("after Finish: %q", got)
	}
}

func TestLiveRedrawsInPlaceAndFitsTheScreen(t *testing.T) {
	var out bytes.Buffer
	l := &progress.Live{W: &out, Width: 10, Height: 4}
	l.Draw([]string{"a", "b"})
	l.Draw([]string{"1", "2", "3", "4", "5", "a very long line"})
	got := out.String()
	if !strings.HasPrefix(got, "\x1b[Ja\r\nb\r\n\x1b[2F\x1b[J") {
		t.Errorf("no move back over the 2 lines drawn: %q", got)
	}
	if !strings.Contains(got, "… 4 line…\r\n5\r\na very l…\r\n") {
		t.Errorf("not cut to 3 rows and 10 columns: %q", got)
	}
}
