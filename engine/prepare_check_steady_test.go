package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOutOfRangeNumberSteady: a with holding a number no float64 holds is
// refused with the same details every time, whatever order its map is
// walked in: the other numbers beside it are still turned to float64s
// (they were left exact when the walk met the bad one first, and the
// kind's checks then refused them as "a json.Number"), and of several bad
// numbers the detail names the least text.
func TestOutOfRangeNumberSteady(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"map", `{"nodes":[{"id":"m","type":"map","with":{"concurrency":2,"items":"${{ [1] }}","nodes":[{"id":"x","type":"set","with":{"value":1}}],"output":1e400}}]}`, "the number 1e400 is out of range"},
		{"agent", `{"nodes":[{"id":"n","type":"agent","with":{"maxSteps":3,"maxTokens":200,"prompt":"p","role":"r","system":1e400,"temperature":0.5}}]}`, "the number 1e400 is out of range"},
		{"several", `{"nodes":[{"id":"s","type":"set","with":{"value":{"a":[1,2e999,3],"b":1e500,"c":4,"d":{"e":9e999}}}}]}`, "the number 1e500 is out of range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(nil)
			var first string
			for i := range 40 {
				inv := prepareInvalid(t, e, reqBody(tt.doc, ""))
				b, _ := json.Marshal(inv.Details)
				got := string(b)
				if strings.Contains(got, "json.Number") {
					t.Fatalf("a number left exact reached a kind's check: %s", got)
				}
				if !strings.Contains(got, tt.want) {
					t.Fatalf("details %s, want %q among them", got, tt.want)
				}
				if i == 0 {
					first = got
				} else if got != first {
					t.Fatalf("details differ between runs:\n%s\n%s", first, got)
				}
			}
		})
	}
}
