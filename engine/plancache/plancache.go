// Package plancache keeps what compiling a workflow document produced,
// keyed by the document's exact text and by what else the compile read of
// its engine, under a byte bound.
//
// A workflow server sends the same workflow document with every execution
// of it, and preparing a request spent most of its time decoding, checking
// and compiling that document again. A request that brings a kept text
// again skips all of that (the engine's prepare.go says what it still
// prepares, and which documents it keeps).
//
// The cache holds at most a MemoryShare-th of the process's memory (64 MB
// of 512: Bound), counted as the text of the documents it keeps and an
// estimate of what was compiled from them (Size). A document whose estimate
// is over half the bound is never kept, so that one author cannot empty the
// cache with one document; any number of distinct documents only evict each
// other. A document sent once costs nothing: a plan is kept on its text's
// second sighting.
package plancache

import (
	"bytes"
	"container/list"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

const (
	seenSlots = 4096 // documents seen once remembered (32 KiB)
	// MemoryShare is the share of the process's memory the cache may hold:
	// an eighth.
	MemoryShare = 8
	// MaxShare: a plan is kept only within a MaxShare-th of the bound.
	MaxShare = 2
)

// Bound returns the cache's bound for a process of memoryMB megabytes.
func Bound(memoryMB int) int64 { return int64(memoryMB) << 20 / MemoryShare }

// key is the map key: the hash of a document's text and what else the
// compile read of the engine (env). The text itself is compared on a hit.
type key struct {
	sum uint64
	env any
}

// A Plan is what compiling one document produced: Value, kept with the
// document's text. A plan never changes once kept, so one serves
// concurrent requests.
type Plan struct {
	Value any
	key   key
	text  string
	size  int64
	elem  *list.Element // in Cache.lru
}

// Len returns the length of the plan's document text: where, in a body
// read from the start of that text, the document ends.
func (p *Plan) Len() int { return len(p.text) }

// KnownWorkflow tells the body's decoder that the plan's text passed its
// structure checks when it was compiled (protocol.KnownWorkflow).
func (*Plan) KnownWorkflow() {}

// A Cache keeps plans under a byte bound, the least recently used evicted
// first. A plan's env is what else than its text a compile depends on
// (the engine's limits, say), a comparable value: a plan is found only
// under an equal env. It is safe for concurrent use; New makes one, and a
// nil *Cache keeps nothing.
//
// Env and Value are interfaces, not type parameters: Go compiles a
// generic type once per shape of its type arguments and spells the
// shapes out in the name of each function and type it makes, which cost
// the bootstrap about 20 kB (pclntab and type descriptors) for this one
// cache. A caller that passes pointers boxes them without allocating.
type Cache struct {
	seed maphash.Seed
	// seen admits a plan on its document's second sighting: a document
	// sent once (a server's one-off, an author's salted text) costs the
	// cache nothing, not even an eviction. A slot holds the last text's
	// hash that fell in it.
	seen [seenSlots]atomic.Uint64

	mu   sync.Mutex
	used int64
	m    map[key]*Plan
	lru  list.List // of *Plan, most recent first
	// heads finds a kept document at the start of a body's workflow
	// member without reading the member to its end first (Lookup): each
	// plan whose text has at least HeadLen bytes is listed under the hash
	// of those bytes, at most HeadWays plans a hash, the latest kept
	// first. A list is replaced, never changed, so that it is read outside
	// mu.
	heads map[uint64][]*Plan
}

// The head index's key length, and how many plans share one key before
// the oldest is no longer found through it (only through Get): documents
// that differ only after their first HeadLen bytes, as a chain of 1,000
// and one of 10,000 do, are each found; an author who sends many of them
// costs each lookup at most HeadWays comparisons.
const (
	HeadLen  = 256
	HeadWays = 4
)

// New returns an empty cache.
func New() *Cache {
	return &Cache{seed: maphash.MakeSeed(), m: map[key]*Plan{}, heads: map[uint64][]*Plan{}}
}

func (c *Cache) key(text []byte, env any) key {
	return key{sum: maphash.Bytes(c.seed, text), env: env}
}

// Get returns the plan of text compiled under env, nil when none is kept.
func (c *Cache) Get(text []byte, env any) *Plan {
	if c == nil {
		return nil
	}
	k := c.key(text, env)
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

// Lookup returns the plan whose text rest begins with, compiled under env,
// nil when none is kept or when its text shares its head with HeadWays
// documents kept since. Its text's end is then the end of rest's first
// value (a plan's text is one whole JSON object), which is how a body's
// workflow is found without reading it (protocol.Decoder.Known).
func (c *Cache) Lookup(rest []byte, env any) *Plan {
	if c == nil || len(rest) < HeadLen {
		return nil
	}
	h := maphash.Bytes(c.seed, rest[:HeadLen])
	c.mu.Lock()
	ways := c.heads[h]
	c.mu.Unlock()
	for _, p := range ways {
		if p.key.env == env && len(p.text) <= len(rest) && p.text == string(rest[:len(p.text)]) {
			c.mu.Lock()
			c.lru.MoveToFront(p.elem)
			c.mu.Unlock()
			return p
		}
	}
	return nil
}

// headOf returns p's key in heads, and whether it has one.
func (c *Cache) headOf(p *Plan) (uint64, bool) {
	if len(p.text) < HeadLen {
		return 0, false
	}
	return maphash.String(c.seed, p.text[:HeadLen]), true
}

// Put keeps v as the plan of text compiled under env, on the second Put
// of the same text and env, evicting the least recently used plans to hold
// the cache within max bytes; a plan over half of max is not kept.
func (c *Cache) Put(text []byte, env, v any, max int64) {
	if c == nil {
		return
	}
	k := c.key(text, env)
	if slot := &c.seen[k.sum%seenSlots]; slot.Swap(k.sum) != k.sum {
		return
	}
	size := Size(text)
	if size > max/MaxShare {
		return
	}
	p := &Plan{Value: v, key: k, text: string(text), size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		c.remove(old)
	}
	for c.used+size > max {
		c.remove(c.lru.Back().Value.(*Plan))
	}
	p.elem = c.lru.PushFront(p)
	c.m[k] = p
	c.used += size
	if h, ok := c.headOf(p); ok {
		old := c.heads[h]
		c.heads[h] = append([]*Plan{p}, old[:min(len(old), HeadWays-1)]...)
	}
}

// remove drops p; c.mu is held.
func (c *Cache) remove(p *Plan) {
	c.lru.Remove(p.elem)
	delete(c.m, p.key)
	c.used -= p.size
	if h, ok := c.headOf(p); ok {
		var kept []*Plan
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

// Reset drops every plan (what a compile reads changed: a node type was
// registered, say).
func (c *Cache) Reset() {
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

// Bytes returns what the cache holds by its estimate, and how many plans.
func (c *Cache) Bytes() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.m)
}

// Size estimates what a plan of text holds of the heap: the text, the
// values decoded from it, and the graph compiled from them. It counts what
// makes the heap grow faster than the text (an object becomes a map, each
// member or element a slot, a node its compiled node and scope), so that
// no shape of document is kept for less than it costs: the engine's
// TestPlanCacheEstimate holds it above the heap measured for plain and
// hostile shapes.
func Size(text []byte) int64 {
	return 2*int64(len(text)) +
		objectBytes*int64(bytes.Count(text, []byte{'{'})) +
		arrayBytes*int64(bytes.Count(text, []byte{'['})) +
		memberBytes*int64(bytes.Count(text, []byte{','}))
}

// What Size counts per object, array and comma (a member or an element
// after the first): a small map's header and first group, a slice's
// header, a slot and its boxed value.
const (
	objectBytes = 448
	arrayBytes  = 64
	memberBytes = 72
)
