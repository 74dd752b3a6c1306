package dag

import (
	"slices"
	"strconv"
	"testing"
)

// needs is a Graph given as each node's needs.
type needs [][]int

func (n needs) Len() int          { return len(n) }
func (n needs) Needs(i int) []int { return n[i] }

func members(s Set, n int) []int {
	var in []int
	for i := range n {
		if s.Has(i) {
			in = append(in, i)
		}
	}
	return in
}

func TestReach(t *testing.T) {
	// 0 ← 1 ← 2, 3 alone, 4 needs 2 and 3; 70 nodes so a set spans words.
	g := make(needs, 70)
	g[1], g[2], g[4] = []int{0}, []int{1}, []int{2, 3}
	g[69] = []int{4, 65}
	g[65] = []int{0}
	reach := Reach(g)
	for _, c := range []struct {
		i    int
		want []int
	}{{0, nil}, {1, []int{0}}, {2, []int{0, 1}}, {3, nil}, {4, []int{0, 1, 2, 3}}, {65, []int{0}}, {69, []int{0, 1, 2, 3, 4, 65}}} {
		if got := members(reach[c.i], len(g)); !slices.Equal(got, c.want) {
			t.Errorf("reach[%d] = %v, want %v", c.i, got, c.want)
		}
	}
}

func TestCycle(t *testing.T) {
	if c := Cycle(needs{nil, {0}, {0, 1}}); c != nil {
		t.Errorf("acyclic graph: cycle %v", c)
	}
	g := needs{{1}, {2}, {0}, {2}}
	c := Cycle(g)
	if !slices.Equal(c, []int{0, 1, 2}) {
		t.Fatalf("cycle %v, want [0 1 2]", c)
	}
	if got, want := CyclePath(c, func(i int) string { return "n" + strconv.Itoa(i) }), "n0 needs n1 needs n2 needs n0"; got != want {
		t.Errorf("CyclePath = %q, want %q", got, want)
	}
}
