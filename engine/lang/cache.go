package lang

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// A server delegates the same workflows again and again, and compiling
// their expressions (expr builds a fresh configuration for every Compile)
// and their input schema (checked against the draft's meta-schema) was half
// the time from request to accepted. What Prepare compiles from request text
// is therefore kept, keyed by that text: compiled programs (here) and
// schemas (the engine's, with a Cache of its own) are immutable and safe for
// concurrent use, and the checks that depend on where an expression sits
// (names, upstream nodes) still run on every request.
//
// Caches are bounded in entries and in key size. When one is full, a
// new entry replaces the least recently used of a few entries picked at
// random: recently used programs stay, as with an LRU, but a working set
// larger than the cache (one big workflow delegated again and again) still
// finds most of what it left last time, where a strict LRU evicts each
// entry just before it is needed again and never hits.
var programs = Cache[*compiled]{Max: 2048, MaxKey: 4 << 10, MaxBytes: 32 << 20}

// quickMemo keeps recent quick compilations (compileQuick), one per slot
// chosen by the text's hash: a fan-out's nodes often share a reference, a
// server sends the same workflows again, and a quick compilation is
// immutable. A slot is overwritten by the next text that hashes to it,
// without the program cache's locking and bookkeeping.
//
// It has a slot for each node of a workflow of several thousand (a chain
// of 1,000 sent again compiled every reference again with 256 slots: a
// quarter of the engine's time per node), and keeps texts of at most
// quickMemoMaxKey bytes, so what it holds stays under a few MB whatever
// the texts sent.
var (
	quickMemo [8192]memoSlot
	quickSeed = maphash.MakeSeed()
)

// memoSlot is one slot of quickMemo. It keeps the text's hash beside the
// compilation, so that a miss (every text of a workflow never seen) is
// told by a word next to the pointer: comparing the texts meant reading
// an old compilation and its text, two cache misses per expression, a
// third of a cold compile. The two are stored apart, so a reader may see
// the hash of one text with another's compilation: the text is compared
// before a hit is taken.
type memoSlot struct {
	hash atomic.Uint64
	c    atomic.Pointer[compiled]
}

// quickMemoMaxKey is the longest text quickMemo keeps.
const quickMemoMaxKey = 256

// compileProgram compiles an expression, budget patch included (see
// budget.go), through the program cache.
func compileProgram(src string) (*compiled, error) {
	h := maphash.String(quickSeed, src)
	slot := &quickMemo[h%uint64(len(quickMemo))]
	if slot.hash.Load() == h {
		if c := slot.c.Load(); c != nil && c.src == src {
			return c, nil
		}
	}
	if c := compileQuick(src); c != nil {
		c.fillExpr()
		if len(src) <= quickMemoMaxKey {
			slot.c.Store(c)
			slot.hash.Store(h)
		}
		return c, nil
	}
	return programs.Get(src, func() (*compiled, error) {
		c, err := compileBudgeted(src, true)
		if err == nil {
			c.fillExpr()
		}
		return c, err
	})
}

// evictionSample is how many entries are compared to choose the one a full
// cache drops.
const evictionSample = 2

// Cache memoizes successful compilations by source text. The zero value
// with Max and MaxKey set is ready to use; it is safe for concurrent use.
//
// What a compilation holds can be many times its text (a 4 KB expression
// compiles to ≈185 KB, a 60 KB schema to ≈5 MB, 10 with its details), and
// an author chooses the texts: 2,048 expressions of 4 KB kept 378 MB, and
// a cache outlives its requests. So a Cache with MaxBytes also bounds what
// its entries weigh together.
type Cache[V any] struct {
	Max    int // entries kept
	MaxKey int // longer sources are compiled but not kept
	// MaxBytes, when positive, bounds the entries' weight together: least
	// recently used ones are dropped until a new one fits, and one heavier
	// than MaxBytes is not kept.
	MaxBytes int
	// Weigh estimates the memory an entry holds; nil weighs its text,
	// times 64.
	Weigh func(key string, v V) int

	mu    sync.Mutex
	m     map[string]*cacheEntry[V]
	tick  uint64
	bytes int
}

type cacheEntry[V any] struct {
	v      V
	used   uint64 // the cache's tick when last returned
	weight int
}

func (c *Cache[V]) weigh(key string, v V) int {
	if c.Weigh != nil {
		return c.Weigh(key, v)
	}
	return 64 * len(key)
}

// Get returns the value compiled from key, compiling it on a miss.
func (c *Cache[V]) Get(key string, compile func() (V, error)) (V, error) {
	c.mu.Lock()
	if e, ok := c.m[key]; ok {
		c.tick++
		e.used = c.tick
		c.mu.Unlock()
		return e.v, nil
	}
	c.mu.Unlock()
	v, err := compile()
	if err != nil || len(key) > c.MaxKey || c.Max <= 0 {
		return v, err
	}
	w := 0
	if c.MaxBytes > 0 {
		if w = c.weigh(key, v); w > c.MaxBytes {
			return v, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*cacheEntry[V])
	}
	if old, ok := c.m[key]; ok {
		c.bytes -= old.weight
		delete(c.m, key)
	}
	for len(c.m) > 0 && (len(c.m) >= c.Max || c.MaxBytes > 0 && c.bytes+w > c.MaxBytes) {
		c.evict()
	}
	c.tick++
	c.m[key] = &cacheEntry[V]{v: v, used: c.tick, weight: w}
	c.bytes += w
	return v, nil
}

// evict drops the least recently used of a few entries: map iteration
// starts at a random place, so they are a sample of the whole cache.
func (c *Cache[V]) evict() {
	var victim string
	oldest, n := uint64(0), 0
	for k, e := range c.m {
		if n == 0 || e.used < oldest {
			victim, oldest = k, e.used
		}
		if n++; n == evictionSample {
			break
		}
	}
	c.bytes -= c.m[victim].weight
	delete(c.m, victim)
}
