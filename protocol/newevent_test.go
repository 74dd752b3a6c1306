package protocol

import "testing"

// NewEvent knows every event type, each by the type its event reports,
// and no other name.
func TestNewEvent(t *testing.T) {
	for _, typ := range []string{TypeAccepted, TypeNodeStarted, TypeNodeCompleted, TypeNodeFailed,
		TypeNodeSuspended, TypePermissionDecision, TypeResult, TypeError} {
		ev := NewEvent(typ)
		if ev == nil || ev.eventType() != typ {
			t.Errorf("NewEvent(%q) = %#v", typ, ev)
		}
	}
	for _, typ := range []string{"", "Result", "batch.end", "node"} {
		if ev := NewEvent(typ); ev != nil {
			t.Errorf("NewEvent(%q) = %#v, want nil", typ, ev)
		}
	}
}
