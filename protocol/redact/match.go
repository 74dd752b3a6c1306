package redact

import (
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// matcher finds every occurrence of a set of patterns in one pass over a
// text, in time linear in the text (Aho–Corasick: a trie of the patterns
// with failure links), whatever the patterns and the text repeat. It
// reports, at each end position, the longest pattern ending there; a
// shorter one ending at the same position lies inside it, so the union of
// the reported intervals is the union of all occurrences of all patterns.
//
// States are numbered in breadth-first order, so the children of a state
// are contiguous and sorted by byte: state s's are kids[s]:kids[s+1].
type matcher struct {
	root    [256]int32 // the child of the root for each byte, 0 for none
	label   []byte     // the byte leading to each state
	kids    []int32    // the first child of each state, and one past the last
	fail    []int32    // the longest proper suffix of a state that is a state
	longest []int32    // the length of the longest pattern ending at a state, 0 for none
}

// newMatcher builds the matcher of patterns (none empty). Its cost is
// linear in their total length, after a sort.
func newMatcher(patterns []string) *matcher {
	patterns = slices.Clone(patterns)
	slices.Sort(patterns)
	patterns = slices.Compact(patterns)

	// A trie with first-child/next-sibling links, built from the sorted
	// patterns: each shares with the previous one the path of their common
	// prefix, and its new nodes come after every existing child of their
	// parent, so siblings are in byte order; the last child of a node on
	// the previous pattern's path is the next node of that path. Its size
	// is known before it is built.
	n := 1
	prev := ""
	for _, p := range patterns {
		n += len(p) - commonPrefixLen(p, prev)
		prev = p
	}
	type tnode struct {
		first, next int32
		label       byte
		term        bool
	}
	nodes := make([]tnode, 1, n)
	nodes[0] = tnode{first: -1, next: -1}
	path := []int32{0} // the nodes of the previous pattern, by depth (path[0] = root)
	prev = ""
	for _, p := range patterns {
		if p == "" {
			continue
		}
		lcp := commonPrefixLen(p, prev)
		var last int32 = -1 // the last child of path[lcp]
		if lcp+1 < len(path) {
			last = path[lcp+1]
		}
		path = path[:lcp+1]
		cur := path[lcp]
		for i := lcp; i < len(p); i++ {
			id := int32(len(nodes))
			nodes = append(nodes, tnode{first: -1, next: -1, label: p[i]})
			if last < 0 {
				nodes[cur].first = id
			} else {
				nodes[last].next = id
			}
			last = -1
			cur = id
			path = append(path, id)
		}
		nodes[cur].term = true
		prev = p
	}

	// Renumber breadth-first.
	n = len(nodes)
	m := &matcher{
		label:   make([]byte, n),
		kids:    make([]int32, n+1),
		fail:    make([]int32, n),
		longest: make([]int32, n),
	}
	order := make([]int32, 0, n) // old ids in the new order
	order = append(order, 0)
	for i := 0; i < len(order); i++ {
		m.kids[i] = int32(len(order))
		for c := nodes[order[i]].first; c >= 0; c = nodes[c].next {
			order = append(order, c)
		}
	}
	m.kids[n] = int32(n)
	for i, old := range order {
		m.label[i] = nodes[old].label
		if nodes[old].term {
			m.longest[i] = -1 // a pattern ends here: its length is the depth
		}
	}
	nodes, order = nil, nil
	// Depths, breadth-first; longest is the depth where a pattern ends.
	depth := make([]int32, n)
	for s := 0; s < n; s++ {
		for c := m.kids[s]; c < m.kids[s+1]; c++ {
			depth[c] = depth[s] + 1
			if m.longest[c] < 0 {
				m.longest[c] = depth[c]
			}
		}
	}
	depth = nil
	for c := m.kids[0]; c < m.kids[1]; c++ {
		m.root[m.label[c]] = c
	}
	// Failure links, breadth-first: a state's is found from its parent's,
	// which is shallower and so already known.
	for s := int32(0); s < int32(n); s++ {
		for c := m.kids[s]; c < m.kids[s+1]; c++ {
			if s == 0 {
				m.fail[c] = 0
			} else {
				f := m.fail[s]
				for {
					if nx := m.next(f, m.label[c]); nx > 0 {
						m.fail[c] = nx
						break
					}
					if f == 0 {
						m.fail[c] = 0
						break
					}
					f = m.fail[f]
				}
			}
			if m.longest[c] == 0 {
				m.longest[c] = m.longest[m.fail[c]]
			}
		}
	}
	return m
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// next returns the child of state s by byte b, or 0 for none (the root is
// nobody's child).
func (m *matcher) next(s int32, b byte) int32 {
	if s == 0 {
		return m.root[b]
	}
	lo, hi := m.kids[s], m.kids[s+1]
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		switch l := m.label[mid]; {
		case l == b:
			return mid
		case l < b:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0
}

// step returns the state after st reads b: its child by b, or that of the
// longest suffix of it that has one, or the root's.
func (m *matcher) step(st int32, b byte) int32 {
	for {
		if st == 0 {
			return m.root[b]
		}
		if nx := m.next(st, b); nx > 0 {
			return nx
		}
		st = m.fail[st]
	}
}

// span is the half-open interval [start, end) of a text.
type span struct{ start, end int }

// find returns the intervals of s that patterns occupy, merged, in order.
func (m *matcher) find(s string) []span {
	var spans []span
	st := int32(0)
	for i := 0; i < len(s); i++ {
		st = m.step(st, s[i])
		if l := m.longest[st]; l > 0 {
			spans = addSpan(spans, span{i + 1 - int(l), i + 1})
		}
	}
	return spans
}

// findFolded returns the intervals of s whose folded view (fold) is a
// pattern of m, merged, in order; widest is m's longest pattern. The
// view's bytes are read as they are made, and the offset in s of the
// escape each came from kept in a ring of the last widest of them (no more
// than s has bytes: the view is never longer than s), so that a match is
// mapped back to the text it was read from: linear in s, like find.
func (m *matcher) findFolded(s string, widest int) []span {
	var spans []span
	if widest == 0 {
		return spans
	}
	ring := min(widest, len(s))
	at := make([]int, ring) // at[k%ring]: where the escape view byte k came from began in s
	st := int32(0)
	k := 0
	var unit [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		bs, next := viewUnit(s, i, unit[:0])
		// A unit read as written (a byte, a backslash and the byte it
		// escapes) maps back byte for byte: a form ending on its first byte
		// leaves the second; a decoded unit goes whole.
		asWritten := next-i == len(bs)
		for j, b := range bs {
			from, to := i, next
			if asWritten {
				from, to = i+j, i+j+1
			}
			at[k%ring] = from
			st = m.step(st, lower(b))
			if l := int(m.longest[st]); l > 0 {
				spans = addSpan(spans, span{at[(k+1-l)%ring], to})
			}
			k++
		}
		i = next
	}
	return spans
}

// viewUnit appends to buf the bytes the text at s[i] stands for, read as a
// URL decoder, a JSON or JavaScript reader and an HTML reader would read it,
// and returns them with where the next unit begins: a %XX escape (twice
// escaped too: %2541 is A) is its byte; \uXXXX (a surrogate pair as one)
// and \xXX are their character in UTF-8; &#N; &#xN; &amp; &lt; &gt; &quot;
// and &apos; are theirs; any other backslash goes with the byte after it,
// as JSON reads them (so \\u0041 is not an escape); any other byte is
// itself. The bytes are never more than the unit's length in s.
func viewUnit(s string, i int, buf []byte) ([]byte, int) {
	switch c := s[i]; c {
	case '%':
		if b, n, ok := hexByte(s, i+1); ok {
			j := i + 1 + n
			for b == '%' {
				nb, nn, ok := hexByte(s, j)
				if !ok {
					break
				}
				b, j = nb, j+nn
			}
			return append(buf, b), j
		}
	case '\\':
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case 'u':
			if r, n := jsonRune(s, i); n > 0 {
				return utf8.AppendRune(buf, r), i + n
			}
		case 'x':
			if b, n, ok := hexByte(s, i+2); ok {
				return append(buf, b), i + 2 + n
			}
		}
		return append(buf, c, s[i+1]), i + 2
	case '&':
		if r, n := htmlRef(s, i); n > 0 {
			return utf8.AppendRune(buf, r), i + n
		}
	}
	return append(buf, s[i]), i + 1
}

// hexByte reads two hex digits at s[i].
func hexByte(s string, i int) (byte, int, bool) {
	if i+1 < len(s) && isHex(s[i]) && isHex(s[i+1]) {
		return unhex(s[i])<<4 | unhex(s[i+1]), 2, true
	}
	return 0, 0, false
}

// hex4 reads four hex digits at s[i], -1 when there are none.
func hex4(s string, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		if !isHex(c) {
			return -1
		}
		r = r<<4 | rune(unhex(c))
	}
	return r
}

// jsonRune reads the \uXXXX escape at s[i], with the low surrogate's after a
// high one: the character and the escape's length, 0 when it is not one
// (a lone surrogate is not a character).
func jsonRune(s string, i int) (rune, int) {
	r := hex4(s, i+2)
	switch {
	case r < 0:
		return 0, 0
	case utf16.IsSurrogate(r):
		if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
			if lo := hex4(s, i+8); lo >= 0 {
				if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
					return d, 12
				}
			}
		}
		return 0, 0
	}
	return r, 6
}

// htmlEntities are the named character references HTML escapers write.
var htmlEntities = map[string]rune{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\''}

// htmlRef reads the character reference at s[i] ('&'): &#N; &#xN; or a
// name of htmlEntities (in any case), terminated by ';'; the character and
// the reference's length, 0 when it is not one.
func htmlRef(s string, i int) (rune, int) {
	const longest = len("&#x10FFFF;")
	end := strings.IndexByte(s[i+1:min(len(s), i+longest)], ';')
	if end < 0 {
		return 0, 0
	}
	body := s[i+1 : i+1+end]
	n := end + 2
	if r, ok := htmlEntities[strings.ToLower(body)]; ok {
		return r, n
	}
	if len(body) < 2 || body[0] != '#' {
		return 0, 0
	}
	base, digits := 10, body[1:]
	if digits[0] == 'x' || digits[0] == 'X' {
		base, digits = 16, digits[1:]
	}
	if digits == "" {
		return 0, 0
	}
	var r rune
	for _, c := range []byte(digits) {
		switch {
		case base == 10 && '0' <= c && c <= '9':
			r = r*10 + rune(c-'0')
		case base == 16 && isHex(c):
			r = r<<4 | rune(unhex(c))
		default:
			return 0, 0
		}
	}
	if !utf8.ValidRune(r) {
		return 0, 0
	}
	return r, n
}

// fold is s as findFolded reads text: each unit of viewUnit decoded, then
// ASCII letters lower-cased.
func fold(s string) string {
	if !needsFold(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		var n int
		b, n = viewUnit(s, i, b)
		i = n
	}
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

// needsFold reports whether s holds an upper-case ASCII letter, a '%', a
// backslash or a '&': otherwise its folded view is s itself, in which find
// has found every listed form, and their folds are lower-cased listed forms
// too.
func needsFold(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c == '\\' || c == '&' || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// addSpan adds sp, which ends after every span of spans, merging it with
// those it overlaps or touches.
func addSpan(spans []span, sp span) []span {
	for len(spans) > 0 && spans[len(spans)-1].end >= sp.start {
		sp.start = min(sp.start, spans[len(spans)-1].start)
		spans = spans[:len(spans)-1]
	}
	return append(spans, sp)
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && out[n-1].end >= sp.start {
			out[n-1].end = max(out[n-1].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// replaceSpans writes s with each span replaced by Marker.
func replaceSpans(sb *strings.Builder, s string, spans []span) {
	at := 0
	for _, sp := range spans {
		sb.WriteString(s[at:sp.start])
		sb.WriteString(Marker)
		at = sp.end
	}
	sb.WriteString(s[at:])
}
