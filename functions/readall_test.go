package functions

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAll: the body comes out whole whatever the declared size says
// (none, exact, short, long, past the preallocation) and however the
// reader splits it, and a read error is returned.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	for _, tt := range []struct {
		name string
		body string
		size int64
	}{
		{"empty, no size", "", 0},
		{"empty, size", "", 10},
		{"no size", body[:1000], 0},
		{"exact", body[:1000], 1000},
		{"declared larger", body[:1000], 5000},
		{"declared smaller", body[:1000], 10},
		{"a megabyte, exact", body, int64(len(body))},
		{"a megabyte, preallocation capped", body, maxBodyPrealloc / 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.body), iotest.OneByteReader(strings.NewReader(tt.body)), iotest.HalfReader(strings.NewReader(tt.body))} {
				got, err := readAll(r, tt.size)
				if err != nil || !bytes.Equal(got, []byte(tt.body)) {
					t.Fatalf("readAll = %d bytes, %v; want %d bytes", len(got), err, len(tt.body))
				}
			}
		})
	}
	boom := errors.New("boom")
	if _, err := readAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10); !errors.Is(err, boom) {
		t.Fatalf("readAll error %v, want %v", err, boom)
	}
}
