package engine

import (
	"bytes"
	"container/list"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/runnerd/lambda-runner/protocol"
)

// A workflow server sends the same workflow document with every execution
// of it, and Prepare spent most of a request decoding, checking and
// compiling that document again. What compiling a document produced is
// therefore kept, keyed by the document's exact text, and a request that
// brings the same text again skips the decode and every document stage:
// only its own parts (envelope, permissions, runtime services, input
// against the kept input schema, secrets) are prepared.
//
// Only what no request can change is kept. A document is cached only
// when it was prepared without any problem, with no runtime.workflows in
// its request, and its compile read nothing of the request: a node kind
// that looks at the runtime payload (model, agent, tool, http, workflow,
// or any kind registered from outside the engine) or a field that may name
// secrets marks the preparation impure (prep.impure), and its plan is not
// kept. A compiled graph is immutable while it runs (its reachability is
// computed once, behind a sync.Once), as a map's sub-graph already runs
// its iterations at once, so one plan serves concurrent executions.

// The cache holds at most a planMemoryShare-th of the process's memory
// (Limits.MemoryMB: 64 MB of 512), counted as the text of the documents
// it keeps and an estimate of their compiled graphs (planSize). A
// document whose estimate is over half the bound (planMaxShare) is never kept,
// so that one author cannot empty the cache with one document; any number
// of distinct documents only evict each other.
const (
	planSeenSlots   = 4096 // documents seen once remembered (32 KiB)
	planMemoryShare = 8
	planMaxShare    = 2 // a plan is at most half the bound
)

// planBound returns the plan cache's bound under limits (defaults applied).
func planBound(l Limits) int64 { return int64(l.MemoryMB) << 20 / planMemoryShare }

// planKey is the cache's map key: the hash of a document's text, and what
// else the compile read of the engine (its limits, whether it has a
// sandbox). The text itself is compared on a hit.
type planKey struct {
	sum    uint64
	limits Limits
	code   bool
}

// plan is what compiling one document produced.
type plan struct {
	key    planKey
	text   string
	g      *graph
	fanout bool // a map distributes
	size   int64
	elem   *list.Element // in planCache.lru
}

// planCache keeps plans under a byte bound, the least recently used
// evicted first. It is safe for concurrent use; the zero value is not
// usable (newPlanCache), and a nil *planCache keeps nothing.
type planCache struct {
	seed maphash.Seed
	// seen admits a plan on its document's second sighting: a document
	// sent once (a server's one-off, an author's salted text) costs the
	// cache nothing, not even an eviction. A slot holds the last text's
	// hash that fell in it.
	seen [planSeenSlots]atomic.Uint64

	mu   sync.Mutex
	used int64
	m    map[planKey]*plan
	lru  list.List // of *plan, most recent first
	// heads finds a kept document at the start of a body's workflow
	// member without reading the member to its end first (lookup): each
	// plan whose text has at least planHeadLen bytes is listed under the
	// hash of those bytes, at most planHeadWays plans a hash, the latest
	// kept first. A list is replaced, never changed, so that it is read
	// outside mu.
	heads map[uint64][]*plan
}

// The head index's key length, and how many plans share one key before
// the oldest is no longer found through it (only through get): documents
// that differ only after their first planHeadLen bytes, as a chain of
// 1,000 and one of 10,000 do, are each found; an author who sends many of
// them costs each lookup at most planHeadWays comparisons.
const (
	planHeadLen  = 256
	planHeadWays = 4
)

func newPlanCache() *planCache {
	return &planCache{seed: maphash.MakeSeed(), m: map[planKey]*plan{}, heads: map[uint64][]*plan{}}
}

// key returns the key of text prepared under limits.
func (c *planCache) key(text []byte, limits Limits, code bool) planKey {
	return planKey{sum: maphash.Bytes(c.seed, text), limits: limits, code: code}
}

// get returns the plan of text, nil when none is kept.
func (c *planCache) get(k planKey, text []byte) *plan {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	p := c.m[k]
	c.mu.Unlock()
	// The text is compared outside the lock (a plan never changes): a
	// large document's comparison holds no other request up.
	if p == nil || p.text != string(text) {
		return nil
	}
	c.mu.Lock()
	// A plan evicted meanwhile is out of the list: moving it does nothing.
	c.lru.MoveToFront(p.elem)
	c.mu.Unlock()
	return p
}

// lookup returns the plan whose text rest begins with, prepared under
// the same limits and code, nil when none is kept or when its text shares
// its head with planHeadWays documents kept since. Its text's end is then
// the end of rest's first value (a plan's text is one whole JSON object),
// which is how a body's workflow is found without reading it
// (protocol.Decoder.Known).
func (c *planCache) lookup(rest []byte, limits Limits, code bool) *plan {
	if c == nil || len(rest) < planHeadLen {
		return nil
	}
	h := maphash.Bytes(c.seed, rest[:planHeadLen])
	c.mu.Lock()
	ways := c.heads[h]
	c.mu.Unlock()
	for _, p := range ways {
		if p.key.limits == limits && p.key.code == code && len(p.text) <= len(rest) && p.text == string(rest[:len(p.text)]) {
			c.mu.Lock()
			c.lru.MoveToFront(p.elem)
			c.mu.Unlock()
			return p
		}
	}
	return nil
}

// headOf returns p's key in heads, and whether it has one.
func (c *planCache) headOf(p *plan) (uint64, bool) {
	if len(p.text) < planHeadLen {
		return 0, false
	}
	return maphash.String(c.seed, p.text[:planHeadLen]), true
}

// put keeps the plan of text, on the second put of its key, evicting the least recently used plans to
// hold the cache within max bytes; a plan over max/planMaxShare is not
// kept.
func (c *planCache) put(k planKey, text []byte, g *graph, fanout bool, max int64) {
	if c == nil {
		return
	}
	if slot := &c.seen[k.sum%planSeenSlots]; slot.Swap(k.sum) != k.sum {
		return
	}
	size := planSize(text)
	if size > max/planMaxShare {
		return
	}
	p := &plan{key: k, text: string(text), g: g, fanout: fanout, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		c.remove(old)
	}
	for c.used+size > max {
		c.remove(c.lru.Back().Value.(*plan))
	}
	p.elem = c.lru.PushFront(p)
	c.m[k] = p
	c.used += size
	if h, ok := c.headOf(p); ok {
		old := c.heads[h]
		c.heads[h] = append([]*plan{p}, old[:min(len(old), planHeadWays-1)]...)
	}
}

func (c *planCache) remove(p *plan) {
	c.lru.Remove(p.elem)
	delete(c.m, p.key)
	c.used -= p.size
	if h, ok := c.headOf(p); ok {
		var kept []*plan
		for _, q := range c.heads[h] {
			if q != p {
				kept = append(kept, q)
			}
		}
		if len(kept) == 0 {
			delete(c.heads, h)
		} else {
			c.heads[h] = kept
		}
	}
}

// reset drops every plan (a node type was registered).
func (c *planCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	clear(c.heads)
	c.lru.Init()
	c.used = 0
}

// bytes returns what the cache holds by its estimate, and how many plans.
func (c *planCache) bytes() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.m)
}

// planSize estimates what a plan of text holds of the heap: the text, the
// values decoded from it, and the graph compiled from them. It counts what
// makes the heap grow faster than the text (an object becomes a map, each
// member or element a slot, a node its compiled node and scope), so that
// no shape of document is kept for less than it costs: TestPlanCacheEstimate
// holds it above the heap measured for plain and hostile shapes.
func planSize(text []byte) int64 {
	return 2*int64(len(text)) +
		planObjectBytes*int64(bytes.Count(text, []byte{'{'})) +
		planArrayBytes*int64(bytes.Count(text, []byte{'['})) +
		planMemberBytes*int64(bytes.Count(text, []byte{','}))
}

// What planSize counts per object, array and comma (a member or an
// element after the first): a small map's header and first group, a
// slice's header, a slot and its boxed value.
const (
	planObjectBytes = 448
	planArrayBytes  = 64
	planMemberBytes = 72
)

// KnownWorkflow tells the body's decoder that the plan's text passed its
// structure checks when it was compiled (protocol.KnownWorkflow).
func (*plan) KnownWorkflow() {}

var _ protocol.KnownWorkflow = (*plan)(nil)
