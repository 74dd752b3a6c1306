package authorjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// stdJSON is v as encoding/json writes it with HTML escaping off: what
// Append must write, byte for byte.
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"markup", "<a href=\"x\">&amp;</a>"},
		{"escapes", "\x00\x01\b\f\n\r\t\x1f\"\\/\u2028\u2029\x7f"},
		{"invalid UTF-8", "a\xffb\xc3"},
		{"unicode", "héllo, 世界 😀"},
		{"numbers", []any{0.0, math.Copysign(0, -1), 1.5, 1e21, 1e20, 1e-6, 1e-7, 123456789.0, -3.25e-10, math.MaxFloat64, math.SmallestNonzeroFloat64}},
		{"json.Number", json.Number("12.50")},
		{"bools", []any{true, false}},
		{"sorted keys", map[string]any{"b": 1.0, "a": []any{}, "<": map[string]any{}, "é": nil}},
		{"nested", map[string]any{"x": []any{map[string]any{"y": []any{"<", 2.0}}}}},
		{"raw", map[string]any{"r": json.RawMessage(`{"a":1}`)}},
		{"expr's slices", map[string]any{"s": []string{"a", "<"}, "i": []int{1, -2}, "f": []float64{0.5}, "m": map[string]string{"k": "&"}}},
		{"bytes", []byte("hello <world>")},
		{"nil slice", []string(nil)},
		{"int kinds", []any{int64(-9), uint8(7), int32(3)}},
		{"struct", struct {
			A string `json:"a"`
		}{"<"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := stdJSON(t, tt.v)
			got, err := Append(context.Background(), nil, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Append = %s\nencoding/json = %s", got, want)
			}
			n, fits, _ := SizeWithin(tt.v, math.MaxInt64)
			if !fits || n < int64(len(got)) {
				t.Errorf("SizeWithin = %d, wrote %d", n, len(got))
			}
		})
	}
}

func TestAppendJSONRefuses(t *testing.T) {
	if _, err := Append(context.Background(), nil, []any{math.NaN()}); err == nil {
		t.Error("NaN encoded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Append(ctx, nil, strings.Repeat("<", 2*checkEvery)); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled encode of 2 MiB: %v", err)
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"", "<>&", "\u2028\x01\"\\", "a\xffb", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := map[string]any{s: []any{s, 1.5, nil}}
		want := stdJSON(t, v)
		got, err := Append(context.Background(), nil, v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Append = %s, %v\nencoding/json = %s", got, err, want)
		}
		if n := stringSize(s); n != int64(len(protocol.AppendString(nil, s))) {
			t.Fatalf("stringSize = %d, wrote %d", n, len(protocol.AppendString(nil, s)))
		}
	})
}
