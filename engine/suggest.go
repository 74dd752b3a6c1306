package engine

import (
	"strconv"
	"strings"
)

// maxListed is how many names listHint lists: a message about one name
// not found, repeated by every node that names it, must not carry all the
// names a request holds (2,000 nodes naming a toolset missing from 2,000
// made a 48 MB response to a 253 KB request).
const maxListed = 10

// listHint returns ` (it has "a", "b")` naming what a lookup could have
// found, the first maxListed of names and how many more, or
// ` (it is empty)`, for a message about a name not found.
func listHint(names []string) string {
	switch {
	case len(names) == 0:
		return " (it is empty)"
	case len(names) > maxListed:
		return " (it has " + joinQuoted(names[:maxListed]) + ", and " + strconv.Itoa(len(names)-maxListed) + " more)"
	}
	return " (it has " + joinQuoted(names) + ")"
}

// missingHint is a message's end for name, not found among what (the
// request's toolsets, model roles or child workflows): a "did you mean"
// and listHint of names. The list is sorted and rendered once a request,
// however many messages end with it.
func (p *prep) missingHint(what, name string, names func() []string) string {
	if p.listed == nil {
		p.listed = map[string]listed{}
	}
	l, ok := p.listed[what]
	if !ok {
		l.names = names()
		l.hint = listHint(l.names)
		p.listed[what] = l
	}
	return p.hints.DidYouMean(name, func() []string { return l.names }) + l.hint
}

// listed is one of prep.missingHint's lists.
type listed struct {
	names []string
	hint  string
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
