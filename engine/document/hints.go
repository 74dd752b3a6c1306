package document

import (
	"strconv"
	"strings"
)

// MaxListed is how many names ListHint lists: a message about one name
// not found, repeated by every node that names it, must not carry all the
// names a request holds (2,000 nodes naming a toolset missing from 2,000
// made a 48 MB response to a 253 KB request).
const MaxListed = 10

// ListHint returns ` (it has "a", "b")` naming what a lookup could have
// found, the first MaxListed of names and how many more, or
// ` (it is empty)`, for a message about a name not found.
func ListHint(names []string) string {
	switch {
	case len(names) == 0:
		return " (it is empty)"
	case len(names) > MaxListed:
		return " (it has " + JoinQuoted(names[:MaxListed]) + ", and " + strconv.Itoa(len(names)-MaxListed) + " more)"
	}
	return " (it has " + JoinQuoted(names) + ")"
}

// JoinQuoted lists names quoted as %q quotes them, comma separated.
func JoinQuoted(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}
