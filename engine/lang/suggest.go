package lang

import "fmt"

// DidYouMean returns ` (did you mean "x"?)` for the candidate closest to
// name when it is a plausible typo, else "".
func DidYouMean(name string, candidates []string) string {
	best := Closest(name, candidates)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Closest returns the candidate closest to name when it is a plausible
// typo of it, else "".
func Closest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(name, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	// A typo changes a few characters; a third of the word is the most
	// that still reads as the same name.
	if bestD < 0 || bestD > max(1, min(len(name), len(best))/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes each count one.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		// Names this long are not typed by hand; keep the cost fixed.
		if a == b {
			return 0
		}
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
