package lang

import (
	"fmt"
	"testing"
)

func TestCompileCacheIsBounded(t *testing.T) {
	c := Cache[int]{Max: 2, MaxKey: 3}
	compiles := 0
	get := func(key string) {
		t.Helper()
		if _, err := c.Get(key, func() (int, error) { compiles++; return len(key), nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "a", "c", "a", "long", "long"} {
		get(k)
		if len(c.m) > c.Max {
			t.Fatalf("after %q the cache holds %d entries, over %d", k, len(c.m), c.Max)
		}
	}
	// a, b, then c replaces b (a was used since); long is never kept.
	if compiles != 5 {
		t.Errorf("%d compilations, want 5", compiles)
	}
	_, err := c.Get("bad", func() (int, error) { return 0, fmt.Errorf("nope") })
	if _, kept := c.m["bad"]; err == nil || kept {
		t.Errorf("a failed compilation was kept (%t) or lost its error (%v)", kept, err)
	}
}

// A working set larger than the cache, used round and round, still hits
// most of the time: emptying the cache when full, or a strict LRU, would
// never hit.
func TestCompileCacheDegradesGracefully(t *testing.T) {
	c := Cache[int]{Max: 1000, MaxKey: 100}
	keys := make([]string, 1500)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	compiles := 0
	for round := range 6 {
		before := compiles
		for _, k := range keys {
			if _, err := c.Get(k, func() (int, error) { compiles++; return 0, nil }); err != nil {
				t.Fatal(err)
			}
		}
		if len(c.m) > c.Max {
			t.Fatalf("the cache holds %d entries, over %d", len(c.m), c.Max)
		}
		if hits := len(keys) - (compiles - before); round > 1 && hits < len(keys)/4 {
			t.Errorf("round %d: %d hits of %d, want at least a quarter", round, hits, len(keys))
		}
	}
}

// A cache with MaxBytes holds entries whose weights add up to at most
// that: older ones make way, and one heavier than the whole is not kept.
func TestCompileCacheWeight(t *testing.T) {
	c := Cache[int]{Max: 100, MaxKey: 100, MaxBytes: 10, Weigh: func(k string, _ int) int { return len(k) }}
	compiles := 0
	get := func(key string) {
		t.Helper()
		if _, err := c.Get(key, func() (int, error) { compiles++; return 0, nil }); err != nil {
			t.Fatal(err)
		}
		sum := 0
		for k := range c.m {
			sum += len(k)
		}
		if sum > c.MaxBytes || sum != c.bytes {
			t.Fatalf("after %q the entries weigh %d (counted %d), bound %d", key, sum, c.bytes, c.MaxBytes)
		}
	}
	for _, k := range []string{"aaaa", "bbbb", "cc", "dddd", "eeeeeeeeeee", "eeeeeeeeeee", "aaaa", "cc"} {
		get(k)
	}
	if _, kept := c.m["eeeeeeeeeee"]; kept {
		t.Error("an entry heavier than MaxBytes was kept")
	}
}

// The program cache outlives requests, and a compiled program holds ≈46
// times its text: 2,048 expressions of 4 KB kept 378 MB before it was
// bounded by weight as well as by count. 400 of them weigh three times
// the bound.
func TestHostileProgramCache(t *testing.T) {
	for i := range 400 {
		src := fmt.Sprintf("%d", i)
		for len(src) < 4000 {
			src += " + len([1,2,3]) * (input.a ?? 1)"
		}
		if _, err := compileProgram(src); err != nil {
			t.Fatal(err)
		}
	}
	programs.mu.Lock()
	n, w := len(programs.m), programs.bytes
	programs.mu.Unlock()
	if w > programs.MaxBytes {
		t.Errorf("%d programs weigh %d, over %d", n, w, programs.MaxBytes)
	}
	if n >= 400 {
		t.Errorf("all %d programs of 4 KB were kept", n)
	}
}
