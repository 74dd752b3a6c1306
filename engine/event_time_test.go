package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// TestEventTimes: through the real Writer, a stream's times never go
// backwards, even with nodes running in parallel and stamping their own
// times (Header.Time); and, run one after another, a node's two events
// carry its attempt's own start and end: completed.at − started.at is its
// durationMs, to the millisecond either way rounds, though most of it went
// on evaluating with, before node.started was written. (In parallel a
// started line may be written after lines stamped later than its start,
// and takes their time instead.)
func TestEventTimes(t *testing.T) {
	for _, width := range []int{1, 40} {
		t.Run(fmt.Sprint("width ", width), func(t *testing.T) {
			nodes := []string{`{"id":"root","type":"set","with":{"value":"${{ len(join(map(1..20000, string(#)), ',')) }}"}}`}
			for i := range width {
				nodes = append(nodes, fmt.Sprintf(`{"id":"n%d","type":"set","needs":["root"],"with":{"value":"${{ len(join(map(1..%d, string(#)), ',')) }}"}}`, i, 1000+500*i))
			}
			body := reqBody(`{"nodes":[`+strings.Join(nodes, ",")+`]}`, "")
			x := prepareReq(t, New(Limits{}), body)
			var buf bytes.Buffer
			sum := x.Run(context.Background(), protocol.NewWriter(&buf, "x", nil))
			if sum.Status != protocol.StatusCompleted {
				t.Fatalf("status %s; stream %.500s", sum.Status, buf.String())
			}
			var last time.Time
			started := map[string]time.Time{}
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var e struct {
					Type       string `json:"type"`
					At         string `json:"at"`
					NodeID     string `json:"nodeId"`
					DurationMs int64  `json:"durationMs"`
				}
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				at, err := time.Parse(time.RFC3339Nano, e.At)
				if err != nil {
					t.Fatalf("at %q: %v", e.At, err)
				}
				if at.Before(last) {
					t.Errorf("%s %s at %s, before the line before it (%s)", e.Type, e.NodeID, e.At, last.Format(time.RFC3339Nano))
				}
				last = at
				switch e.Type {
				case "node.started":
					started[e.NodeID] = at
				case "node.completed":
					if width > 1 {
						break
					}
					// Both times are cut to the millisecond, the
					// duration too: they differ by at most 1.
					if d := at.Sub(started[e.NodeID]).Milliseconds() - e.DurationMs; d < -1 || d > 1 {
						t.Errorf("%s: completed − started = %d ms, durationMs %d", e.NodeID, at.Sub(started[e.NodeID]).Milliseconds(), e.DurationMs)
					}
				}
			}
		})
	}
}

// TestRunClock: the run's clock reads as the wall clock does at the start
// and keeps its pace after, and a run made without a start reads now.
func TestRunClock(t *testing.T) {
	for _, r := range []*run{{start: time.Now()}, {}} {
		before := time.Now()
		got := r.now()
		after := time.Now()
		if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
			t.Errorf("start %v: now() = %v, outside [%v, %v]", r.start, got, before, after)
		}
	}
}
