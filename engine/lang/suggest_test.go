package lang

import (
	"fmt"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	// Digits, far from every letter: the match is the one word among them.
	digits := make([]string, 0, 20_000)
	for i := range 20_000 {
		digits = append(digits, fmt.Sprintf("%010d", i))
	}
	first := append([]string{"qwertyuiop"}, digits...)
	last := append(digits[:len(digits):len(digits)], "qwertyuiop")
	tests := []struct {
		name, of   string
		candidates []string
		want       string
	}{
		{"one letter off", "wiht", []string{"with", "when", "needs"}, "with"},
		{"transposed", "retyr", []string{"retry", "type"}, "retry"},
		{"itself is no suggestion", "with", []string{"with"}, ""},
		{"too far", "colour", []string{"with", "type"}, ""},
		{"short names, one edit", "n5x", []string{"n5", "n6"}, "n5"},
		// Lengths too far apart are passed over without a comparison; a
		// nearer candidate after them is still found.
		{"length passed over", "ab", []string{"abcdefgh", "ax"}, "ax"},
		{"among many, first", "qwertyuiox", first, "qwertyuiop"},
		// The search stops once maxHintCells cells are filled: a match past
		// that many candidates of the name's length is not looked for.
		{"among many, past the bound", "qwertyuiox", last, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Closest(tt.of, tt.candidates); got != tt.want {
				t.Errorf("Closest(%q) = %q, want %q", tt.of, got, tt.want)
			}
		})
	}
}

// TestHintsBound: one request searches for at most maxHints suggestions;
// past them a message has none, and its candidates are not even listed.
func TestHintsBound(t *testing.T) {
	var h Hints
	listed := 0
	list := func() []string { listed++; return []string{"with"} }
	for i := range maxHints + 5 {
		got := h.DidYouMean("wiht", list)
		want := ` (did you mean "with"?)`
		if i >= maxHints {
			want = ""
		}
		if got != want {
			t.Fatalf("search %d: %q, want %q", i+1, got, want)
		}
	}
	if listed != maxHints {
		t.Errorf("candidates listed %d times, want %d", listed, maxHints)
	}
	var none *Hints
	for range maxHints + 1 {
		if got := none.DidYouMean("wiht", list); !strings.Contains(got, "with") {
			t.Fatalf("a nil *Hints counts nothing: %q", got)
		}
	}
}
