package document

import (
	"encoding/json"
	"testing"
	"time"
)

// A huge but valid timeoutMs is clamped to what a duration holds, not
// wrapped to a negative one.
func TestHostileDecodeHugeTimeout(t *testing.T) {
	doc, err := Decode([]byte(`{"nodes":[{"id":"a","type":"set","timeoutMs":1e30}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	sub := nodeFromValue(map[string]any{"id": "a", "type": "set", "timeoutMs": json.Number("1e30")})
	if sub.TimeoutMs != maxMillis {
		t.Fatalf("a sub-graph's timeoutMs 1e30 decoded as %d", sub.TimeoutMs)
	}
	if got := doc.Nodes[0].TimeoutMs; got != maxMillis || time.Duration(got)*time.Millisecond <= 0 {
		t.Fatalf("timeoutMs 1e30 decoded as %d", got)
	}
}
