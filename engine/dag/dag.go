// Package dag holds the algorithms the engine runs over a dependency
// graph: the transitive needs of every node as bitsets, and a cycle with
// its path text. A graph is seen through Graph alone (how many nodes, and
// each one's needs as node indexes), so the package knows nothing of the
// engine's nodes; it uses the standard library only.
package dag

import (
	"slices"
	"strings"
)

// Graph is what the algorithms read of a dependency graph: its nodes are
// 0 … Len()-1, and Needs(i) the indexes of the nodes node i depends on.
type Graph interface {
	Len() int
	Needs(i int) []int
}

// Set is a set of node indexes, one bit each.
type Set []uint64

// Has reports whether i is in b.
func (b Set) Has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b Set) set(i int) { b[i/64] |= 1 << (i % 64) }
func (b Set) or(o Set) {
	for w := range b {
		b[w] |= o[w]
	}
}

// Reach returns, for every node of an acyclic g, the set of its transitive
// needs, in one pass in need order (O(n²/64) words, one backing array for
// all the sets).
func Reach(g Graph) []Set {
	n := g.Len()
	words := (n + 63) / 64
	backing := make([]uint64, n*words)
	reach := make([]Set, n)
	done := make([]bool, n)
	var stack []int
	for start := range n {
		if done[start] {
			continue
		}
		stack = append(stack[:0], start)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			if done[i] {
				stack = stack[:len(stack)-1]
				continue
			}
			pending := false
			for _, k := range g.Needs(i) {
				if !done[k] {
					stack = append(stack, k)
					pending = true
				}
			}
			if pending {
				continue
			}
			r := Set(backing[i*words : (i+1)*words])
			for _, k := range g.Needs(i) {
				r.set(k)
				r.or(reach[k])
			}
			reach[i], done[i] = r, true
			stack = stack[:len(stack)-1]
		}
	}
	return reach
}

// Cycle returns the nodes of one cycle of g, in need order, or nil.
func Cycle(g Graph) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, g.Len())
	var stack []int
	var found []int
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, k := range g.Needs(i) {
			switch color[k] {
			case grey:
				at := slices.Index(stack, k)
				found = slices.Clone(stack[at:])
				return true
			case white:
				if visit(k) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range color {
		if color[i] == white && visit(i) {
			return found
		}
	}
	return nil
}

// CyclePath renders a cycle as "a needs b needs c needs a" in needs
// direction, name giving each node's id.
func CyclePath(cycle []int, name func(i int) string) string {
	names := make([]string, 0, len(cycle)+1)
	for _, i := range cycle {
		names = append(names, name(i))
	}
	names = append(names, name(cycle[0]))
	return strings.Join(names, " needs ")
}
