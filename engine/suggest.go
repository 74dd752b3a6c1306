package engine

import "github.com/runnerd/lambda-runner/engine/document"

// missingHint is a message's end for name, not found among what (the
// request's toolsets, model roles or child workflows): a "did you mean"
// and document.ListHint of names. The list is sorted and rendered once a request,
// however many messages end with it.
func (p *prep) missingHint(what, name string, names func() []string) string {
	if p.listed == nil {
		p.listed = map[string]listed{}
	}
	l, ok := p.listed[what]
	if !ok {
		l.names = names()
		l.hint = document.ListHint(l.names)
		p.listed[what] = l
	}
	return p.hints.DidYouMean(name, func() []string { return l.names }) + l.hint
}

// listed is one of prep.missingHint's lists.
type listed struct {
	names []string
	hint  string
}
