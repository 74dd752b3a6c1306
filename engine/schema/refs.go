package schema

import (
	"net/url"
	"slices"
	"strings"
)

// resolveRefs resolves every $ref and $dynamicRef inside the schema, as the
// library will, and adds the targets to the referring node's in-place
// subschemas. A reference that leaves the schema is refused: the runner
// never fetches what a request names.
func (c *checker) resolveRefs() {
	for _, n := range c.nodes {
		for _, r := range n.refs {
			at := append(slices.Clip(n.toks), r.keyword)
			target, frag, ok := c.resolve(at, n, r.value)
			if !ok {
				continue
			}
			if r.keyword == "$ref" {
				n.refTarget = target
				n.inPlace = append(n.inPlace, target)
				continue
			}
			// A $dynamicRef applies one schema, which depends on the path
			// taken to it: any of the dynamic anchors of its name may be it.
			n.dynamic = append(n.dynamic, target)
			if frag != "" && !strings.HasPrefix(frag, "/") {
				n.dynamic = append(n.dynamic, c.dynAnch[frag]...)
			}
		}
	}
}

func (c *checker) resolve(at []string, n *node, value string) (target int, frag string, ok bool) {
	u, err := url.Parse(value)
	if err != nil {
		c.fail(at, "not a URI reference: %v", err)
		return 0, "", false
	}
	abs := n.base.ResolveReference(u)
	frag = abs.Fragment
	abs.Fragment, abs.RawFragment = "", ""
	res, ok := c.byURI[abs.String()]
	if !ok {
		c.fail(at, "remote reference %q is not loaded: schemas must be self-contained", value)
		return 0, "", false
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		target, ok = c.byPtr[c.nodes[res].ptr+frag]
		if !ok {
			c.fail(at, "%q points at no subschema", value)
		}
		return target, frag, ok
	}
	target, ok = c.anchors[abs.String()+"#"+frag]
	if !ok {
		c.fail(at, "%q names no anchor of its resource", value)
	}
	return target, frag, ok
}

// checkCycles refuses a cycle of in-place subschemas: the library would
// apply them to the same value without end, until the goroutine's stack
// overflows (a fatal error, not a panic).
func (c *checker) checkCycles() {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(c.nodes))
	var stack []int
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, j := range slices.Concat(c.nodes[i].inPlace, c.nodes[i].dynamic) {
			switch color[j] {
			case grey:
				start := slices.Index(stack, j)
				var names []string
				for _, k := range stack[start:] {
					names = append(names, "#"+c.nodes[k].ptr)
				}
				names = append(names, "#"+c.nodes[j].ptr)
				c.fail(c.nodes[j].toks, "reference cycle %s applies schemas to the same value without end", strings.Join(names, " → "))
				return false
			case white:
				if !visit(j) {
					return false
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		c.order = append(c.order, i)
		return true
	}
	for i := range c.nodes {
		if color[i] == white && !visit(i) {
			return
		}
	}
}

// checkCost refuses a schema that checks one value against more than
// MaxApplied subschemas: $defs that refer to each other twice at every
// level double the work per level, and recursion through properties or
// items repeats that at every level of the value.
func (c *checker) checkCost() {
	if most, k := c.perValue(func(*node) int { return 1 }, MaxApplied); most > MaxApplied {
		c.fail(nil, "a value %d levels deep is checked against more than %d subschemas (through $ref, allOf, anyOf, ... and recursion): simplify the schema", k, MaxApplied)
		return
	}
	// The library compares a value with each enum value in turn: what
	// one value may be compared with, for Validate's bound on the whole.
	c.comparisons, _ = c.perValue(enumWeight, MaxComparisons)
}

// enumWeight is how many values a subschema's enum and const compare a
// value with.
func enumWeight(n *node) int {
	w := 0
	if e, ok := n.obj["enum"].([]any); ok {
		w = len(e)
	}
	if _, ok := n.obj["const"]; ok {
		w++
	}
	return w
}

// perValue returns the most that the subschemas applied to one value weigh
// together, weight(n) each, at any level of the value down to
// MaxInstanceDepth, and the first level where that most is reached; past
// limit it stops, returning limit+1. applied[i] is what applying node i
// applies to a value k levels below; it is counted level by level,
// in-place targets before their referrers.
func (c *checker) perValue(weight func(*node) int, limit int) (most, level int) {
	prev := make([]int, len(c.nodes))
	cur := make([]int, len(c.nodes))
	for k := 0; k <= MaxInstanceDepth; k++ {
		for _, i := range c.order {
			n := c.nodes[i]
			sum := 0
			if k == 0 {
				sum = weight(n)
			} else {
				sum = maxOf(n.props, prev) + maxOf(n.prefix, prev)
				for _, j := range n.desc {
					sum += prev[j]
				}
			}
			for _, j := range n.inPlace {
				sum += cur[j]
			}
			sum += maxOf(n.dynamic, cur)
			cur[i] = min(sum, limit+1)
		}
		if cur[0] > most {
			most, level = cur[0], k
		}
		if most > limit || slices.Equal(cur, prev) {
			return most, level // past the limit, or the same at every level from here on
		}
		prev, cur = cur, prev
	}
	return most, level
}

func maxOf(ids []int, counts []int) int {
	m := 0
	for _, j := range ids {
		m = max(m, counts[j])
	}
	return m
}
