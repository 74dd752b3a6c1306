package batch

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestPayloadRoundTrip: an event written in parts (EncodeHead, EncodeOwn,
// AppendHead, the items, AppendTail) is as long as PayloadBytes says, and
// Decode reads back the head's fields, the batch's own and its items.
func TestPayloadRoundTrip(t *testing.T) {
	head := Doc{Version: Version, ExecutionID: "ex", Request: json.RawMessage(`{"a":"<b>"}`), Node: "m", Concurrency: 2, DeadlineMs: 7}
	common, err := EncodeHead(&head)
	if err != nil {
		t.Fatal(err)
	}
	doc := head
	doc.Start, doc.MaxNodes = 3, 4
	own, err := EncodeOwn(&doc)
	if err != nil {
		t.Fatal(err)
	}
	items := []string{`1`, `{"x":"<"}`}
	size := int64(len(items[0]) + 1 + len(items[1]) + 1)
	n := PayloadBytes(common, own, size)
	buf := AppendHead(make([]byte, 0, n), common, own)
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, it...)
	}
	buf = AppendTail(buf)
	// PayloadBytes counts a comma after each item, the last's included.
	if int64(len(buf)) != n-1 {
		t.Errorf("event of %d bytes, PayloadBytes %d:\n%s", len(buf), n, buf)
	}
	got, err := Decode(buf)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, buf)
	}
	if got.ExecutionID != "ex" || got.Node != "m" || got.Start != 3 || got.MaxNodes != 4 || len(got.Items) != 2 || string(got.Items[1]) != items[1] || string(got.Request) != `{"a":"<b>"}` {
		t.Errorf("decoded %+v from\n%s", got, buf)
	}
	if _, err := Decode([]byte(`{"version":"2.0"}`)); !errors.Is(err, ErrNotBatch) {
		t.Errorf("an HTTP event: %v", err)
	}
}
