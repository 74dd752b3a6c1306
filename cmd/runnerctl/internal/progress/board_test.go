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
		"… each (map) running · attempt 1 · 2.0 s",
		// Items in index order, though [1] started first.
		"  [0]",
		"    … tag (set) running · attempt 1 · 2.0 s",
		"  [1]",
		"    ✓ tag (set) completed · attempt 2 · 1.5 s",
		"… review (workflow) running · attempt 1 · 2.0 s",
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

func TestItemsInIndexOrder(t *testing.T) {
	b := &progress.Board{}
	b.Expect("each", "map")
	for _, id := range []string{"each[10].a", "each[2].a", "each[1].a", "each[2].b", "each[0].a"} {
		b.Apply(&protocol.NodeCompleted{NodeID: id, NodeType: "set", Attempt: 1, DurationMs: 12})
	}
	want := []string{
		"✓ each (map) completed · <1 ms", "  [0]", "    ✓ a (set) completed · attempt 1 · 12 ms",
		"  [1]", "    ✓ a (set) completed · attempt 1 · 12 ms",
		"  [2]", "    ✓ a (set) completed · attempt 1 · 12 ms", "    ✓ b (set) completed · attempt 1 · 12 ms",
		"  [10]", "    ✓ a (set) completed · attempt 1 · 12 ms",
	}
	b.Apply(&protocol.NodeCompleted{NodeID: "each", NodeType: "map", DurationMs: 0})
	if got := b.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{400 * time.Microsecond, "0.4 ms"},
		{0, "0.0 ms"},
		{12 * time.Millisecond, "12 ms"},
		{999 * time.Millisecond, "999 ms"},
		{1500 * time.Millisecond, "1.5 s"},
		{59 * time.Second, "59.0 s"},
		{125 * time.Second, "2m5s"},
		{-time.Second, "0 ms"},
	}
	for _, tt := range tests {
		if got := progress.Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := progress.Millis(0); got != "<1 ms" {
		t.Errorf("Millis(0) = %q, want <1 ms", got)
	}
	if got := progress.Millis(12); got != "12 ms" {
		t.Errorf("Millis(12) = %q, want 12 ms", got)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		width int
		want  []string
	}{
		{"fits", "a b c", 20, []string{"> a b c"}},
		{"at spaces", "alpha beta gamma delta", 14, []string{"> alpha beta", "    gamma", "    delta"}},
		{"a word longer than a line", "see https://host/a-very-long-path ok", 16, []string{"> see", "    https://host", "    /a-very-long", "    -path ok"}},
		{"no width: one line", "alpha beta gamma", 0, []string{"> alpha beta gamma"}},
		{"runes, not bytes", "ééé ééé", 9, []string{"> ééé ééé"}},
		{"empty", "", 10, []string{"> "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := progress.Wrap(tt.s, tt.width, "> ", "    ")
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Wrap(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
			}
		})
	}
}

func TestSummaryListsFailuresAndTheBoardShowsARoleFallback(t *testing.T) {
	b := &progress.Board{}
	b.Expect("each", "map")
	b.Expect("ask", "model")
	for _, ev := range []protocol.Event{
		&protocol.NodeStarted{NodeID: "ask", NodeType: "model", Attempt: 1, Role: &protocol.RoleFallback{Requested: "critic", Used: "general"}},
		&protocol.NodeFailed{NodeID: "each[2].tag", NodeType: "set", Attempt: 1, Error: protocol.NodeError{Code: "TIMEOUT", Message: "slow"}, Retrying: true},
		&protocol.NodeCompleted{NodeID: "each[2].tag", NodeType: "set", Attempt: 2},
		&protocol.NodeFailed{NodeID: "each[10].tag", NodeType: "set", Attempt: 1, Error: protocol.NodeError{Code: "X", Message: "ten\x1b[2J"}},
		&protocol.NodeFailed{NodeID: "each[1].tag", NodeType: "set", Attempt: 1, Error: protocol.NodeError{Code: "X", Message: "one"}},
	} {
		b.Apply(ev)
	}
	b.Finish()
	want := []string{"3 failed:", "  each[1].tag (set): X: one", "  each[10].tag (set): X: ten[2J", "  ask (model): ended with the execution"}
	if got := b.Summary(80); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lines := b.Lines(); !strings.Contains(strings.Join(lines, "\n"), "✗ ask (model) failed · attempt 1 · <1 ms · role critic → general") {
		t.Errorf("no role fallback on the board:\n%s", strings.Join(lines, "\n"))
	}
	if got := (&progress.Board{}).Summary(80); got != nil {
		t.Errorf("summary of no failure: %q", got)
	}
}
