package glob

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// backtracking is the matcher this package had until round 21: one
// backtrack point over the whole text, reset at each separator. It is
// quadratic, and it is the reference the segment matcher must agree with.
func backtracking(pattern, s string, sep byte) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0 && s[mark] != sep:
			mark++
			i = mark
			p = star + 1
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// The segment matcher decides as the backtracking one did, on texts built
// of few letters so that near misses abound.
func TestMatchSegmentsAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 21))
	word := func(alphabet string, n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 200_000 {
		p, s := word("ab*/", 8), word("ab/", 10)
		if got, want := matchSegments(p, s, '/'), backtracking(p, s, '/'); got != want {
			t.Fatalf("matchSegments(%q, %q) = %v, want %v", p, s, got, want)
		}
	}
	// Host patterns: "*." and the label count.
	for range 100_000 {
		p, h := word("ab*.", 8), word("ab.", 10)
		if !strings.HasPrefix(p, "*.") && r.IntN(2) == 0 {
			p = "*." + p
		}
		want := false
		np, nh := normalizeHost(p), normalizeHost(h)
		if rest, ok := strings.CutPrefix(np, "*."); ok {
			for i := 1; i < len(nh); i++ {
				if nh[i] == '.' && backtracking(rest, nh[i+1:], '.') {
					want = true
					break
				}
			}
		} else {
			want = np == "*" || backtracking(np, nh, '.')
		}
		if got := MatchHost(p, h); got != want {
			t.Fatalf("MatchHost(%q, %q) = %v, want %v", p, h, got, want)
		}
	}
}

// Round 21: matching is linear. A pattern of the longest length Validate
// accepts, made to miss late, against resources of a megabyte, in every
// shape that made the backtracking matcher quadratic.
func TestHostileMatchLinear(t *testing.T) {
	rep := strings.Repeat
	long := rep("a", 1<<20)
	tests := []struct{ name, pattern, resource string }{
		{"a star then a near miss", "*" + rep("a", MaxPattern-2) + "b", long},
		{"stars between near misses", rep("*aaab", MaxPattern/5), long},
		{"a segment then the near miss", "x/*" + rep("a", MaxPattern-4) + "b", "x/" + long},
		{"many segments", rep("*a/", MaxPattern/3), rep(rep("a", 1000)+"/", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(tt.pattern); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for range 10 {
				Match(tt.pattern, tt.resource)
				MatchHost(strings.ReplaceAll(tt.pattern, "/", "."), strings.ReplaceAll(tt.resource, "/", "."))
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("20 matches took %v", took)
			}
		})
	}
	if Validate(rep("a", MaxPattern+1)) == nil {
		t.Errorf("a pattern of %d bytes was accepted", MaxPattern+1)
	}
}
