package batch

import (
	"bytes"
	"encoding/json"

	"github.com/runnerd/lambda-runner/engine/secrets"
)

// The parent writes a batch's event in parts: what every batch of a map
// shares is encoded once (EncodeHead), each batch's own fields apart
// (EncodeOwn), and its items are appended one by one between AppendHead
// and AppendTail, each encoded once into the event.

// own are the fields of Doc each batch has of its own, which AppendHead
// writes after the common ones.
type own struct {
	Start     int              `json:"start,omitempty"`
	MaxNodes  int64            `json:"maxNodes"`
	Learned   *secrets.Learned `json:"learned,omitempty"`
	LearnCaps *secrets.Caps    `json:"learnCaps,omitempty"`
}

const (
	itemsOpen  = `,"items":[`
	eventClose = "]}}"
)

// EncodeHead encodes the event of a batch without its own fields (start,
// maxNodes, learned, items: all omitted when empty), HTML escaping off.
func EncodeHead(head *Doc) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Event{Batch: head}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncodeOwn encodes the fields of doc that are its batch's own: start,
// maxNodes and what the parent lends it of the redactor (Learned,
// LearnCaps).
func EncodeOwn(doc *Doc) ([]byte, error) {
	return json.Marshal(own{Start: doc.Start, MaxNodes: doc.MaxNodes, Learned: doc.Learned, LearnCaps: doc.LearnCaps})
}

// PayloadBytes is the size of the event written from head (EncodeHead),
// own (EncodeOwn) and items bytes of items with their commas.
func PayloadBytes(head, own []byte, items int64) int64 {
	// head is {"runnerFanOutBatch":{...}}, own is {...}: the event is
	// head's members, own's, then the items, closed twice.
	return int64(len(head)-2+1+len(own)-2+len(itemsOpen)+len(eventClose)) + items
}

// AppendHead appends to buf the event up to its first item: head's
// members, own's and the opening of the items.
func AppendHead(buf, head, own []byte) []byte {
	buf = append(append(buf, head[:len(head)-2]...), ',')
	return append(append(buf, own[1:len(own)-1]...), itemsOpen...)
}

// AppendTail appends to buf the end of the event, after its last item.
func AppendTail(buf []byte) []byte { return append(buf, eventClose...) }
