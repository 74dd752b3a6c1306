package lang

import (
	"strings"
	"testing"
	"time"
)

// TestHostileQuickReading: texts built to make the quick reading (and the
// fall back to expr behind it) scan or recurse without end are read in
// time linear in their length, and agree with expr where they are read.
func TestHostileQuickReading(t *testing.T) {
	huge := 1 << 20
	tests := []struct {
		name  string
		src   string
		quick bool // read quickly
		err   bool // rejected by expr
	}{
		{"a reference in a megabyte of blanks", strings.Repeat(" ", huge) + "input.a" + strings.Repeat("\n", huge), true, false},
		{"a hundred thousand comments", strings.Repeat("/* c */", 100_000) + "nodes.a.output + 1" + strings.Repeat("// c\n", 100_000), true, false},
		{"an unclosed comment of a megabyte", "input.a /*" + strings.Repeat("*", huge), false, true},
		{"a comment of stars never closed by a slash", "input.a /*" + strings.Repeat("* ", huge/2), false, true},
		{"ten thousand fields", "input" + strings.Repeat(".a", 10_000), false, true}, // expr: too many nodes
		{"a megabyte of digits", "input.a + " + strings.Repeat("9", huge), false, true},
		{"a megabyte identifier", "input." + strings.Repeat("a", huge), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if got := compileQuick(tt.src) != nil; got != tt.quick {
				t.Errorf("read quickly: %v, want %v", got, tt.quick)
			}
			checkQuickAgrees(t, tt.src)
			_, err := compileProgram(tt.src)
			if (err != nil) != tt.err {
				t.Errorf("compileProgram error %.200v, want an error: %v", err, tt.err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}
