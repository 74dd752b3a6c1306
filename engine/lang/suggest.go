package lang

import "fmt"

// The bounds of the search for a suggestion. A message's "did you mean"
// is found by comparing a name with every candidate, and an author
// controls both counts: 10,000 nodes each naming one that is not upstream
// made 50 million comparisons (16 s of CPU, before acceptance). So one
// request searches for at most maxHints suggestions, and one search fills
// at most maxHintCells cells of the comparison's table; past either, a
// message has no suggestion (it is the same message otherwise).
const (
	maxHints     = 16
	maxHintCells = 1 << 18
)

// Hints counts one request's searches for suggestions against maxHints.
// The zero value is ready to use; a nil *Hints counts nothing (each search
// is still bounded by maxHintCells).
type Hints struct{ n int }

// Closest is [Closest] while h allows one more search, else "": the
// candidates are listed only then.
func (h *Hints) Closest(name string, candidates func() []string) string {
	if h != nil {
		if h.n >= maxHints {
			return ""
		}
		h.n++
	}
	return Closest(name, candidates())
}

// DidYouMean is [DidYouMean] while h allows one more search, else "".
func (h *Hints) DidYouMean(name string, candidates func() []string) string {
	return didYouMean(h.Closest(name, candidates))
}

// DidYouMean returns ` (did you mean "x"?)` for the candidate closest to
// name when it is a plausible typo, else "".
func DidYouMean(name string, candidates []string) string {
	return didYouMean(Closest(name, candidates))
}

func didYouMean(best string) string {
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Closest returns the candidate closest to name when it is a plausible
// typo of it, else "". It compares name with the candidates in order
// until maxHintCells cells are filled.
func Closest(name string, candidates []string) string {
	best, bestD := "", -1
	cells := 0
	var scratch []int
	for _, c := range candidates {
		if c == name || tooFar(len(name), len(c)) {
			continue
		}
		if cells += len(name) * len(c); cells > maxHintCells {
			break
		}
		var d int
		d, scratch = editDistance(name, c, scratch)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > allowance(len(name), len(best)) {
		return ""
	}
	return best
}

// allowance is the most edits that still read as a typo of the same name:
// a typo changes a few characters, a third of the word at most.
func allowance(a, b int) int { return max(1, min(a, b)/3) }

// tooFar reports whether names of lengths a and b are further apart than
// allowance even before their characters are compared.
func tooFar(a, b int) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d > allowance(a, b)
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes each count one. It reuses scratch for its rows, and returns it.
func editDistance(a, b string, scratch []int) (int, []int) {
	if len(a) > 64 || len(b) > 64 {
		// Names this long are not typed by hand; keep the cost fixed.
		if a == b {
			return 0, scratch
		}
		return max(len(a), len(b)), scratch
	}
	w := len(b) + 1
	if cap(scratch) < 3*w {
		scratch = make([]int, 3*w)
	}
	scratch = scratch[:3*w]
	prev2, prev, cur := scratch[:w], scratch[w:2*w], scratch[2*w:]
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
	return prev[len(b)], scratch
}
