package batch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestBatchesByBytes: a batch never carries more item bytes than fit one
// event, and an item alone over it is refused naming it.
func TestBatchesByBytes(t *testing.T) {
	items := []int64{40, 40, 40, 10, 90, 5}
	bs, err := Pack(items, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, fmt.Sprintf("%d+%d", b.Start, b.N))
	}
	if want := []string{"0+2", "2+2", "4+2"}; !slices.Equal(got, want) {
		t.Errorf("batches %v, want %v", got, want)
	}
	if bs, _ := Pack(items, 1, 1000); len(bs) != len(items) {
		t.Errorf("batchSize 1: %d batches", len(bs))
	}
	if _, err := Pack([]int64{5, 200}, 10, 100); err == nil || !strings.Contains(err.Error(), "item 1 is 200 bytes") {
		t.Errorf("err = %v", err)
	}
}
