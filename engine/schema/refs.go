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
// items repeats that at every level of the value. It also finds what one
// part of a value, and one byte of its text, may cost the library, for
// Validate's bounds on the whole (see MaxChecks and MaxPatternWork).
func (c *checker) checkCost() {
	applied := func(_ *node, k int) int {
		if k == 0 {
			return 1
		}
		return 0
	}
	if levels := c.perLevel(applied, MaxApplied); levels[len(levels)-1] > MaxApplied {
		c.fail(nil, "a value %d levels deep is checked against more than %d subschemas (through $ref, allOf, anyOf, ... and recursion): simplify the schema", len(levels)-1, MaxApplied)
		return
	}
	c.checks = c.perLevel(checksOf, MaxChecks)
	c.patternWork = c.perLevel(patternWorkOf, MaxPatternWork)
}

// checksOf is what applying n costs the library: at level 0 (the value
// it is applied to) the application itself and one check for each enum
// value, const, property, required name and dependent it has, which the
// library goes through in turn whatever the value holds; at level 1 (each
// member) one match of the member's name with each patternProperties.
func checksOf(n *node, k int) int {
	switch k {
	case 0:
		w := 1
		if e, ok := n.obj["enum"].([]any); ok {
			w += len(e)
		}
		if _, ok := n.obj["const"]; ok {
			w++
		}
		if m, ok := n.obj["properties"].(map[string]any); ok {
			w += len(m)
		}
		if r, ok := n.obj["required"].([]any); ok {
			w += len(r)
		}
		if m, ok := n.obj["dependentRequired"].(map[string]any); ok {
			for _, r := range m {
				w++
				if names, ok := r.([]any); ok {
					w += len(names)
				}
			}
		}
		if m, ok := n.obj["dependentSchemas"].(map[string]any); ok {
			w += len(m)
		}
		return w
	case 1:
		m, _ := n.obj["patternProperties"].(map[string]any)
		return len(m)
	}
	return 0
}

// patternWorkOf is what matching n's patterns costs a byte of text: the
// instructions of its pattern's program at level 0 (a string value), of
// its patternProperties' programs at level 1 (each member's name), as
// check estimated them. Go's regexp takes up to about 20 ns a byte and
// instruction.
func patternWorkOf(n *node, k int) int {
	switch k {
	case 0:
		return n.patternInsts
	case 1:
		return n.namePatternInsts
	}
	return 0
}

// perLevel returns, for each level k of a value from 0, what the
// subschemas applied to one value k levels below the root weigh together:
// weight(n, k) is what n costs a value k levels below the one it is
// applied to, before its subschemas. The list stops at the level from
// which every deeper one weighs the same as its last, or at the first
// past limit (then limit+1), or at MaxInstanceDepth. cur[i] is what
// applying node i costs a value k levels below; it is counted level by
// level, in-place targets before their referrers.
func (c *checker) perLevel(weight func(n *node, k int) int, limit int) []int {
	prev := make([]int, len(c.nodes))
	cur := make([]int, len(c.nodes))
	var levels []int
	for k := 0; k <= MaxInstanceDepth; k++ {
		for _, i := range c.order {
			n := c.nodes[i]
			sum := weight(n, k)
			if k > 0 {
				sum += maxOf(n.props, prev) + maxOf(n.prefix, prev)
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
		// From level 2 on, weight is 0 and a level follows from the one
		// before alone: one the same as the last repeats for ever.
		if k >= 2 && slices.Equal(cur, prev) {
			return levels
		}
		levels = append(levels, cur[0])
		if cur[0] > limit {
			return levels
		}
		prev, cur = cur, prev
	}
	return levels
}

func maxOf(ids []int, counts []int) int {
	m := 0
	for _, j := range ids {
		m = max(m, counts[j])
	}
	return m
}
