package engine

import (
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
)

// didYouMean returns ` (did you mean "x"?)` for the candidate closest to
// name when it is a plausible typo, else "" (the expression language's
// rule, so that every message suggests alike).
func didYouMean(name string, candidates []string) string {
	return lang.DidYouMean(name, candidates)
}

// listHint returns ` (it has "a", "b")` naming what a lookup could have
// found, or ` (it is empty)`, for a message about a name not found.
func listHint(names []string) string {
	if len(names) == 0 {
		return " (it is empty)"
	}
	return " (it has " + joinQuoted(names) + ")"
}

// joinQuoted lists names quoted as %q quotes them, comma separated.
func joinQuoted(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}
