package batch

import "fmt"

// Span is a run of consecutive items sent to one child: N items from
// Start, Size bytes of JSON with their commas.
type Span struct {
	Start, N int
	Size     int64
}

// ItemTooLargeError is Pack's refusal of an item that alone is over what
// one event can carry.
type ItemTooLargeError struct {
	Item       int   // its index
	Size, Room int64 // its JSON's bytes, and the room for items
}

func (e *ItemTooLargeError) Error() string {
	return fmt.Sprintf("item %d is %d bytes encoded, over what one child invocation's event can carry (%d bytes with the request)", e.Item, e.Size, e.Room)
}

// Pack cuts items, of the JSON sizes given, into spans of at most size
// items that fit in room bytes. An item alone over room is an
// *ItemTooLargeError naming it.
func Pack(sizes []int64, size int, room int64) ([]Span, error) {
	var out []Span
	cur := Span{}
	for i, s := range sizes {
		n := s + 1 // and its comma
		if n > room {
			return nil, &ItemTooLargeError{Item: i, Size: s, Room: room}
		}
		if cur.N > 0 && (cur.N == size || cur.Size+n > room) {
			out = append(out, cur)
			cur = Span{}
		}
		if cur.N == 0 {
			cur.Start = i
		}
		cur.N++
		cur.Size += n
	}
	if cur.N > 0 {
		out = append(out, cur)
	}
	return out, nil
}
