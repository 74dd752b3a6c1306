package plancache

import (
	"fmt"
	"strings"
	"testing"
)

// doc is a document text of about n bytes whose first HeadLen bytes are
// the same for every salt.
func doc(salt, n int) string {
	return `{"nodes":[` + strings.Repeat(`{"id":"a","type":"set"},`, n/24) + fmt.Sprintf(`{"id":"z%d"}]}`, salt)
}

const max = 64 << 20

// keep puts text twice (a plan is kept on the second sighting) and
// returns its plan.
func keep(t *testing.T, c *Cache, text string, env int) *Plan {
	t.Helper()
	for range 2 {
		c.Put([]byte(text), env, "v:"+text, max)
	}
	p := c.Get([]byte(text), env)
	if p == nil || p.Value != "v:"+text {
		t.Fatalf("no plan kept for %.40q", text)
	}
	return p
}

// TestHeadWays: documents sharing their first HeadLen bytes are found by
// them up to HeadWays at a time, the latest kept first; an older one is
// then found only through Get. A plan evicted or dropped leaves the index.
func TestHeadWays(t *testing.T) {
	c := New()
	var docs []string
	var plans []*Plan
	for salt := range HeadWays + 2 {
		d := doc(salt, 2*HeadLen)
		docs = append(docs, d)
		plans = append(plans, keep(t, c, d, 0))
	}
	if docs[0][:HeadLen] != docs[len(docs)-1][:HeadLen] {
		t.Fatal("the documents do not share their head")
	}
	for i, d := range docs {
		found := c.Lookup([]byte(d+`}`), 0)
		latest := i >= len(docs)-HeadWays
		if latest && found != plans[i] {
			t.Errorf("document %d of %d: Lookup found %p, want %p", i, len(docs), found, plans[i])
		}
		if !latest && found != nil {
			t.Errorf("document %d of %d: Lookup found a plan past the index's %d ways", i, len(docs), HeadWays)
		}
		if c.Get([]byte(d), 0) != plans[i] {
			t.Errorf("document %d: Get does not find its plan", i)
		}
	}
	c.mu.Lock()
	c.remove(plans[len(plans)-1])
	c.mu.Unlock()
	if c.Lookup([]byte(docs[len(docs)-1]), 0) != nil {
		t.Error("an evicted plan is still found by its head")
	}
	if c.Lookup([]byte(docs[len(docs)-2]), 0) != plans[len(plans)-2] {
		t.Error("evicting one plan lost another of its head")
	}
	c.Reset()
	if len(c.heads) != 0 || c.Lookup([]byte(docs[len(docs)-2]), 0) != nil {
		t.Error("Reset left plans in the head index")
	}
}

// TestHeadServesWithoutTheMap: Lookup finds a plan by its head alone (out
// of the map that Get reads), only under the same env, and only for text
// the body holds whole.
func TestHeadServesWithoutTheMap(t *testing.T) {
	c := New()
	d := doc(0, 2*HeadLen)
	p := keep(t, c, d, 1)
	c.mu.Lock()
	delete(c.m, p.key)
	c.mu.Unlock()
	rest := []byte(d + `,"input":{}}`)
	if got := c.Lookup(rest, 1); got != p || got.Len() != len(d) {
		t.Fatalf("Lookup found %p, want the kept plan %p", got, p)
	}
	for _, tt := range []struct {
		name string
		rest []byte
		env  int
	}{
		{"other env", rest, 2},
		{"cut short", []byte(d[:len(d)-1]), 1},
		{"shorter than the head", []byte(d[:HeadLen-1]), 1},
		{"other first bytes", append([]byte(`{ `), d[1:]...), 1},
	} {
		if got := c.Lookup(tt.rest, tt.env); got != nil {
			t.Errorf("%s: Lookup found a plan", tt.name)
		}
	}
}

// TestSecondSighting: a text put once is not kept; one over its share of
// the bound never is; the bound holds by evicting the least recently used.
func TestSecondSighting(t *testing.T) {
	c := New()
	d := doc(0, 100)
	c.Put([]byte(d), 0, "v", max)
	if c.Get([]byte(d), 0) != nil {
		t.Fatal("kept on the first sighting")
	}
	big := doc(1, 4096)
	for range 2 {
		c.Put([]byte(big), 0, "v", 2*Size([]byte(big))-1)
	}
	if c.Get([]byte(big), 0) != nil {
		t.Fatal("a plan over its share of the bound was kept")
	}
	a, b, e := doc(2, 100), doc(3, 100), doc(4, 100)
	bound := 3*Size([]byte(a)) - 1
	for _, text := range []string{a, a, b, b, e, e} {
		c.Put([]byte(text), 0, "v", bound)
	}
	if used, n := c.Bytes(); n != 2 || used > bound || c.Get([]byte(a), 0) != nil || c.Get([]byte(e), 0) == nil {
		t.Fatalf("%d plans of %d bytes under a bound of %d; the oldest kept: %v", n, used, bound, c.Get([]byte(a), 0) != nil)
	}
}
