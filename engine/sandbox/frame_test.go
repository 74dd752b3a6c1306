package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Round 21: a frame is bounded by what it decodes to, not only by its
// bytes: a worker's reply of "{}," within the byte limit decodes to twenty
// times it.
func TestReadFrameWeighed(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name  string
		value string
		err   error
	}{
		{"text within the limit", `{"output":"` + strings.Repeat("a", limit-1024) + `"}`, nil},
		{"structure within its bytes, over as decoded", `{"output":[` + strings.TrimSuffix(strings.Repeat("{},", limit/4), ",") + `]}`, ErrFrameTooHeavy},
		{"numbers over as decoded", `{"output":[` + strings.TrimSuffix(strings.Repeat("1,", limit/3), ",") + `]}`, ErrFrameTooHeavy},
		{"a few objects", `{"output":[{},{},{"a":[1,2,3]}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteFrame(&buf, json.RawMessage(tt.value)); err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			err := ReadFrame(&buf, limit, &v)
			if !errors.Is(err, tt.err) && !(err == nil && tt.err == nil) {
				t.Errorf("ReadFrame = %v, want %v", err, tt.err)
			}
		})
	}
}
