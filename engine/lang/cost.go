package lang

import (
	"fmt"
	"math/bits"
	"reflect"
	"regexp"
	"unicode/utf8"

	"github.com/expr-lang/expr/vm/runtime"
)

// The cost model. A step is about 100 ns of work: maxExprSteps
// (DefaultMaxExprSteps, 10 million) is about a second. Every operation
// whose work grows with its operands is charged by what it does, before it
// does it, so that the budget and the context (checked whenever a charge is
// more than a step, and every ctxCheckEvery steps otherwise) see the work
// as it is spent:
//
//   - a predicate iteration (map, filter, all, reduce…): a step;
//   - `in` over an array, and the builtins that walk a collection (max,
//     min, mean, sum, count…): a step per 2 elements;
//   - sort and median: n·log2(n)/2 steps;
//   - string scans (contains, startsWith, indexOf, upper, trim…): a step
//     per 64 bytes;
//   - `==` and `!=` between two collections of the same length: a step per
//     64 bytes of the smaller (reflect.DeepEqual walks them);
//   - where a predicate can repeat them, comparing two strings (`==`, `<`,
//     …), hashing one (a computed key, the needle of `in`, a groupBy key)
//     and the strings an `in`, sort or walking builtin reads: a step per
//     cmpBytesPerStep (256) bytes, measured at about 25 ns for memcmp; a
//     sortBy key is charged sortKeyCompares times;
//   - `matches`: compiling a pattern not seen recently 16 steps per
//     instruction of its program, and the match (input bytes + 1) ×
//     (instructions + 4) / 6 steps: Go's regexp is linear, but in both
//     (about 10 ns per byte and instruction, measured);
//   - toJSON and string(): the bytes they really produce (toJSON indents:
//     its size is computed with the indentation) / 16 steps, and twice
//     those bytes against maxExprMemory.
//
// No single operation may cost more than MaxOperationSteps, whatever the
// step budget (even none): an operation runs to its end once started, so
// this is what bounds how late a node's timeout, the deadline or a
// disconnect is seen.

// MaxOperationSteps is the most one operation may cost: about 0.1 s.
const MaxOperationSteps = 1_000_000

// Pattern bounds: a regular expression is compiled in time and memory
// proportional to its program, which a short text can make large (x{1000}).
const (
	// MaxPatternBytes caps the text of a `matches` pattern.
	MaxPatternBytes = 4 << 10
	// MaxPatternInsts caps the estimated program of a pattern.
	MaxPatternInsts = 10_000
)

// patterns keeps compiled patterns, one compilation per distinct text
// while it stays in the cache.
var patterns = Cache[*pattern]{Max: 256, MaxKey: MaxPatternBytes, MaxBytes: 16 << 20,
	// A compiled program holds ≈40 bytes an instruction.
	Weigh: func(_ string, p *pattern) int { return 64 * int(p.insts) }}

type pattern struct {
	re    *regexp.Regexp
	insts int64
}

// cmpBytesPerStep is how many bytes of strings compared or hashed make a
// step: memcmp and the map hash read about 10 GB/s, 25 ns for 256 bytes,
// a quarter of a step.
const cmpBytesPerStep = 256

// sortKeyCompares is how often a sortBy key may be compared: log2 of the
// longest array an evaluation can build.
const sortKeyCompares = 32

// stringWork is the steps of comparing or hashing v once: its bytes if
// it is a string.
func stringWork(v any) int64 {
	if s, ok := v.(string); ok {
		return int64(len(s)) / cmpBytesPerStep
	}
	return 0
}

// order is `<`, `>`, `<=` or `>=` charged by the bytes two strings
// compare, with the VM's own functions.
func (b *exprBudget) order(l, r any, op string) (bool, error) {
	steps := int64(1)
	if ls, ok := l.(string); ok {
		if rs, ok := r.(string); ok {
			steps += int64(min(len(ls), len(rs))) / cmpBytesPerStep
		}
	}
	if err := b.charge(steps, 0); err != nil {
		return false, err
	}
	switch op {
	case "<":
		return runtime.Less(l, r), nil
	case ">":
		return runtime.More(l, r), nil
	case "<=":
		return runtime.LessOrEqual(l, r), nil
	}
	return runtime.MoreOrEqual(l, r), nil
}

// stringBytes returns the total and the largest length of the strings
// among a's elements.
func stringBytes(a []any) (total, longest int64) {
	for _, e := range a {
		if s, ok := e.(string); ok {
			n := int64(len(s))
			total += n
			longest = max(longest, n)
		}
	}
	return total, longest
}

// Walk modes: how a collection's length is charged.
const (
	walkLinear = 0
	walkSort   = 1
)

// walk charges the work of walking x (an array, a map or a string) and
// returns x.
func (b *exprBudget) walk(x any, mode int) (any, error) {
	var n, strs, longest int64
	switch v := x.(type) {
	case string:
		n = int64(len(v)) / 32 // a step per 64 bytes once halved
	case []any:
		// Strings among the elements are compared or hashed by their
		// bytes: once each in a linear walk, longest×log n in a sort.
		n = int64(len(v))
		strs, longest = stringBytes(v)
	case map[string]any:
		n = int64(len(v))
	case nil:
	default:
		rv := reflect.ValueOf(x)
		switch rv.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
			n = int64(rv.Len())
		}
	}
	steps := 1 + n/2 + strs/cmpBytesPerStep
	if mode == walkSort && n > 1 {
		steps = 1 + n*int64(bitsLen(n))/2*(1+longest/cmpBytesPerStep)
	}
	if err := b.charge(steps, 0); err != nil {
		return nil, err
	}
	return x, nil
}

func bitsLen(n int64) int { return bits.Len64(uint64(n)) }

// equal is `==` between operands the checker could not type as scalars.
func (b *exprBudget) equal(l, r any) (bool, error) {
	steps := int64(1)
	if lenOf(l) >= 0 && lenOf(l) == lenOf(r) {
		steps += min(SizeOf(l), SizeOf(r)) / 64
	}
	if ls, ok := l.(string); ok {
		if rs, ok := r.(string); ok && len(ls) == len(rs) {
			steps += int64(len(ls)) / cmpBytesPerStep
		}
	}
	if err := b.charge(steps, 0); err != nil {
		return false, err
	}
	return runtime.Equal(l, r), nil
}

// lenOf is the length of a slice or map, -1 for anything else.
func lenOf(x any) int {
	switch v := x.(type) {
	case []any:
		return len(v)
	case map[string]any:
		return len(v)
	case nil, string, bool, int, float64:
		return -1
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len()
	}
	return -1
}

// matches is `matches`, charged as the cost model says.
func (b *exprBudget) matches(s, p any) (bool, error) {
	if runtime.IsNil(s) || runtime.IsNil(p) {
		return false, b.charge(1, 0)
	}
	pat, ok := p.(string)
	if !ok {
		return false, fmt.Errorf("invalid operation: matches (mismatched types %T and %T)", s, p)
	}
	var in []byte
	str, isStr := s.(string)
	if !isStr {
		if in, ok = s.([]byte); !ok {
			return false, fmt.Errorf("invalid operation: matches (mismatched types %T and %T)", s, p)
		}
	}
	pt, err := b.pattern(pat)
	if err != nil {
		return false, err
	}
	n := int64(len(str) + len(in))
	if err := b.charge(1+(n+1)*(pt.insts+4)/6, 0); err != nil {
		return false, err
	}
	if isStr {
		return pt.re.MatchString(str), nil
	}
	return pt.re.Match(in), nil
}

// pattern returns p compiled, charging the compilation when it is not
// cached.
func (b *exprBudget) pattern(p string) (*pattern, error) {
	// A pattern in the cache has passed the bounds: they are checked, and
	// the program estimated once, on a miss.
	return patterns.Get(p, func() (*pattern, error) {
		insts, err := patternBounds(p)
		if err != nil {
			return nil, err
		}
		if err := b.charge(1+16*insts, 200*insts); err != nil {
			return nil, err
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, err
		}
		return &pattern{re: re, insts: insts}, nil
	})
}

// PatternError is a `matches` pattern over one of the pattern bounds.
type PatternError struct {
	Bytes, Insts int64
}

func (e *PatternError) Error() string {
	if e.Bytes > MaxPatternBytes {
		return fmt.Sprintf("a matches pattern of %d bytes is over the cap of %d bytes", e.Bytes, MaxPatternBytes)
	}
	return fmt.Sprintf("a matches pattern would compile to about %d instructions, over the cap of %d (a repetition such as x{1000} counts x a thousand times)", e.Insts, MaxPatternInsts)
}

// checkPattern applies the pattern bounds, before anything parses p.
func checkPattern(p string) error {
	_, err := patternBounds(p)
	return err
}

// patternBounds applies the pattern bounds to p and returns its estimated
// program size.
func patternBounds(p string) (insts int64, err error) {
	if len(p) > MaxPatternBytes {
		return 0, &PatternError{Bytes: int64(len(p))}
	}
	n := patternInsts(p)
	if n > MaxPatternInsts {
		return n, &PatternError{Bytes: int64(len(p)), Insts: n}
	}
	return n, nil
}

// patternInsts estimates, in one pass over the text, the instructions of
// p's compiled program: an atom is one, a group its contents, and a
// counted repetition multiplies what it repeats. It errs high, which only
// charges more.
func patternInsts(p string) int64 {
	const ceiling = 1 << 40
	stack := []int64{0}
	last := int64(0)
	add := func(n int64) { stack[len(stack)-1] = min(stack[len(stack)-1]+n, ceiling) }
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			i++
			last = 1
			add(1)
		case '[':
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			i = j
			last = 1
			add(1)
		case '(':
			stack = append(stack, 0)
			last = 0
		case ')':
			if len(stack) > 1 {
				g := stack[len(stack)-1] + 2
				stack = stack[:len(stack)-1]
				last = g
				add(g)
			}
		case '{':
			lo, hi, comma, j := int64(0), int64(-1), false, i+1
			for ; j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == ',' && !comma); j++ {
				switch {
				case p[j] == ',':
					comma, hi = true, 0
				case comma:
					hi = min(hi*10+int64(p[j]-'0'), 1<<20)
				default:
					lo = min(lo*10+int64(p[j]-'0'), 1<<20)
				}
			}
			if j < len(p) && p[j] == '}' && j > i+1 {
				k := lo
				switch {
				case hi > 0:
					k = hi
				case comma:
					k = lo + 1 // {n,}: n copies and a star
				}
				// Each further copy, and the split before an optional one.
				extra := min((last+1)*max(k-1, 0), ceiling)
				add(extra)
				last = min((last+1)*max(k, 1), ceiling)
				i = j
				continue
			}
			last = 1
			add(1)
		case '*', '+', '?', '|':
			add(1)
		default:
			last = 1
			add(1)
		}
	}
	var n int64
	for _, s := range stack {
		n = min(n+s, ceiling)
	}
	return n
}

// jsonSize is the length of v's JSON as encoding/json writes it (HTML
// characters escaped), indented by two spaces per level from depth when
// indent is set, as toJSON writes it: exact for the indentation and
// structure, an upper bound for numbers.
func jsonSize(v any, indent bool, depth int64) int64 {
	switch v := v.(type) {
	case nil:
		return 4
	case bool:
		if v {
			return 4
		}
		return 5
	case string:
		return jsonStringSize(v)
	case int, int64, float64, float32, int32, uint64, uint:
		return 24
	case []any:
		if len(v) == 0 {
			return 2
		}
		n := int64(2 + len(v) - 1) // brackets, commas
		for _, e := range v {
			n += jsonSize(e, indent, depth+1)
		}
		if indent {
			n += int64(len(v))*(1+2*(depth+1)) + 1 + 2*depth
		}
		return n
	case map[string]any:
		if len(v) == 0 {
			return 2
		}
		n := int64(2 + len(v) - 1)
		for k, e := range v {
			n += jsonStringSize(k) + 1 + jsonSize(e, indent, depth+1)
			if indent {
				n++ // the space after the colon
			}
		}
		if indent {
			n += int64(len(v))*(1+2*(depth+1)) + 1 + 2*depth
		}
		return n
	}
	// Other values (typed collections, times): their estimated size, twice
	// over and indented as deep as they sit, errs high.
	return 2*SizeOf(v) + 2*depth
}

// jsonStringSize is the length of s quoted and escaped.
func jsonStringSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			case c == '"' || c == '\\':
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}
