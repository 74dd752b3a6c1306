package lang

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"regexp"
	"time"
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
// among x's elements, whatever the kind of slice or array x is ([]any, the
// []string split returns, …).
func stringBytes(x any) (total, longest int64) {
	_, total, longest = elemStats(x)
	return total, longest
}

// elemStats returns the length of x (a slice, array, map or string) and the
// total and largest length of the strings among its elements, for every
// kind reflect can give: a typed slice ([]string from split) is charged as
// []any is.
func elemStats(x any) (n, strs, longest int64) {
	switch v := x.(type) {
	case nil:
		return 0, 0, 0
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				l := int64(len(s))
				strs += l
				longest = max(longest, l)
			}
		}
		return int64(len(v)), strs, longest
	case []string:
		for _, s := range v {
			l := int64(len(s))
			strs += l
			longest = max(longest, l)
		}
		return int64(len(v)), strs, longest
	case map[string]any:
		return int64(len(v)), 0, 0
	case string:
		return int64(len(v)), 0, 0
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		n = int64(rv.Len())
		switch rv.Type().Elem().Kind() {
		case reflect.String:
			for i := 0; i < rv.Len(); i++ {
				l := int64(rv.Index(i).Len())
				strs += l
				longest = max(longest, l)
			}
		case reflect.Interface:
			for i := 0; i < rv.Len(); i++ {
				if e := rv.Index(i); !e.IsNil() && e.Elem().Kind() == reflect.String {
					l := int64(e.Elem().Len())
					strs += l
					longest = max(longest, l)
				}
			}
		}
		return n, strs, longest
	case reflect.Map, reflect.String:
		return int64(rv.Len()), 0, 0
	}
	return 0, 0, 0
}

// nestedStats is elemStats for the builtins that descend into nested arrays
// (flatten, max, min, mean, median): the leaves they visit, every nested
// array counted once besides its elements, and the strings among them. It
// stops once the count is over limit: an array of shared arrays (let a1 =
// [a0, a0]; …) has 2^depth leaves in a few hundred bytes.
func nestedStats(x any, limit int64) (n, strs, longest int64) {
	w := nestedWalk{left: limit}
	w.add(x)
	return limit - w.left, w.strs, w.longest
}

type nestedWalk struct {
	left, strs, longest int64
}

func (w *nestedWalk) str(l int64) {
	w.strs += l
	w.longest = max(w.longest, l)
}

func (w *nestedWalk) add(x any) bool {
	switch a := x.(type) {
	case []any:
		for _, e := range a {
			w.left--
			switch e := e.(type) {
			case string:
				w.str(int64(len(e)))
			case nil, bool, int, float64:
			default:
				if !w.add(e) {
					return false
				}
			}
			if w.left < 0 {
				return false
			}
		}
		return true
	case []string:
		w.left -= int64(len(a))
		for _, s := range a {
			w.str(int64(len(s)))
		}
		return w.left >= 0
	case nil, bool, int, float64, string, map[string]any:
		return true
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		switch rv.Type().Elem().Kind() {
		case reflect.Interface, reflect.Slice, reflect.Array:
			for i := 0; i < rv.Len(); i++ {
				w.left--
				if !w.add(rv.Index(i).Interface()) || w.left < 0 {
					return false
				}
			}
		default:
			n, strs, longest := elemStats(x)
			w.left -= n
			w.strs += strs
			w.longest = max(w.longest, longest)
		}
	}
	return w.left >= 0
}

// Walk modes: how a collection's length is charged.
const (
	walkLinear = 0
	walkSort   = 1
	// walkNested and walkNestedSort count the leaves of nested arrays, as
	// max, min and mean (and median, which sorts them) visit them.
	walkNested     = 2
	walkNestedSort = 3
)

// stepsLeft is the most one more operation may be charged: the one-operation
// bound, or what is left of the step budget when that is less.
func (b *exprBudget) stepsLeft() int64 {
	left := int64(MaxOperationSteps)
	if b.maxSteps > 0 {
		left = min(left, b.maxSteps-b.steps)
	}
	return max(left, 0)
}

// memLeft is what is left of the memory budget (math.MaxInt64 for none).
func (b *exprBudget) memLeft() int64 {
	if b.maxMem <= 0 {
		return math.MaxInt64
	}
	return max(b.maxMem-b.mem, 0)
}

// sizeLimit is the largest size an operation charged a step per perStep
// units of it and perUnit bytes a unit may still have: over it, the charge
// fails. A walk that measures the size stops there, so that what it
// visits is bounded by what the evaluation may still spend.
func (b *exprBudget) sizeLimit(perStep, perUnit int64) int64 {
	limit := b.stepsLeft()
	if limit > math.MaxInt64/perStep {
		limit = math.MaxInt64
	} else {
		limit *= perStep
	}
	if perUnit > 0 {
		limit = min(limit, b.memLeft()/perUnit)
	}
	return limit
}

// walk charges the work of walking x (an array, a map or a string) and
// returns x.
func (b *exprBudget) walk(x any, mode int) (any, error) {
	var n, strs, longest int64
	switch mode {
	case walkNested:
		n, strs, longest = nestedStats(x, b.sizeLimit(2, 0))
	case walkNestedSort:
		// median copies the leaves into a slice it sorts: at most the
		// ~110,000 the one-operation bound lets it sort, 2 MB for the
		// time of the call.
		n, strs, longest = nestedStats(x, b.sizeLimit(2, 0))
	default:
		if s, ok := x.(string); ok {
			n = int64(len(s)) / 32 // a step per 64 bytes once halved
			break
		}
		// Strings among the elements are compared or hashed by their
		// bytes: once each in a linear walk, longest×log n in a sort.
		n, strs, longest = elemStats(x)
	}
	steps := 1 + n/2 + strs/cmpBytesPerStep
	if (mode == walkSort || mode == walkNestedSort) && n > 1 {
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
	steps := int64(1) + b.compareCost(l, r)
	if err := b.charge(steps, 0); err != nil {
		return false, err
	}
	return runtime.Equal(l, r), nil
}

// compareCost is the steps of runtime.Equal(l, r) beyond the first: two
// collections of one length are compared element by element, all the way
// down (a step per 64 bytes of the smaller, 8 more a map entry), two
// strings of one length by their bytes. The sizes are measured with walks that stop where the charge
// would fail: runtime.Equal does not see shared references, so
// a25 == [a24, a24] compares 2^26 leaves, and so would the measure.
func (b *exprBudget) compareCost(l, r any) int64 {
	var steps int64
	if ln := lenOf(l); ln >= 0 && ln == lenOf(r) {
		limit := b.sizeLimit(64, 0)
		ls := compareWithin(l, limit)
		rs := compareWithin(r, min(ls, limit))
		steps += min(ls, rs) / 64
	}
	if ls, ok := l.(string); ok {
		if rs, ok := r.(string); ok && len(ls) == len(rs) {
			steps += int64(len(ls)) / cmpBytesPerStep
		}
	}
	return steps
}

// in is `in` over a collection that is not a literal of constants: an
// array is searched with runtime.Equal, each element compared charged
// before it is (deeply, by the sizes compared, when the needle and the
// element are collections of one length), so that a search whose compares
// are large sees the budget and the context between them.
func (b *exprBudget) in(needle, hay any) (bool, error) {
	if _, err := b.walk(hay, walkLinear); err != nil {
		return false, err
	}
	if lenOf(needle) < 0 {
		return runtime.In(needle, hay), nil
	}
	switch a := hay.(type) {
	case []any:
		for _, e := range a {
			if err := b.charge(1+b.compareCost(e, needle), 0); err != nil {
				return false, err
			}
			if runtime.Equal(e, needle) {
				return true, nil
			}
		}
		return false, nil
	case nil:
		return false, nil
	}
	rv := reflect.ValueOf(hay)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			e := rv.Index(i).Interface()
			if err := b.charge(1+b.compareCost(e, needle), 0); err != nil {
				return false, err
			}
			if runtime.Equal(e, needle) {
				return true, nil
			}
		}
		return false, nil
	}
	return runtime.In(needle, hay), nil
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
		return false, fmt.Errorf("matches takes a string and a pattern (a string), got %s and %s", TypeName(s), TypeName(p))
	}
	var in []byte
	str, isStr := s.(string)
	if !isStr {
		if in, ok = s.([]byte); !ok {
			return false, fmt.Errorf("matches takes a string and a pattern (a string), got %s and %s", TypeName(s), TypeName(p))
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
	return jsonSizeWithin(v, indent, depth, math.MaxInt64)
}

// jsonSizeWithin is jsonSize when that is at most limit, and some size over
// limit otherwise: the walk stops once over, having read at most about
// limit bytes of strings and limit/2 elements, so that a value of shared
// references (whose JSON is exponentially larger than the value) is not
// walked whole.
func jsonSizeWithin(v any, indent bool, depth, limit int64) int64 {
	w := jsonWalk{indent: indent, left: limit}
	w.add(v, depth)
	return limit - w.left
}

type jsonWalk struct {
	indent bool
	left   int64
}

func (w *jsonWalk) take(n int64) bool {
	w.left -= n
	return w.left >= 0
}

// add takes the size of v's JSON, at depth, and reports whether the walk
// may go on.
func (w *jsonWalk) add(v any, depth int64) bool {
	switch v := v.(type) {
	case nil:
		return w.take(4)
	case bool:
		if v {
			return w.take(4)
		}
		return w.take(5)
	case string:
		return w.take(JSONStringSize(v))
	case int, int64, float64, float32, int32, uint64, uint:
		return w.take(24)
	case []any:
		if len(v) == 0 {
			return w.take(2)
		}
		n := int64(2 + len(v) - 1) // brackets, commas
		if w.indent {
			n += int64(len(v))*(1+2*(depth+1)) + 1 + 2*depth
		}
		if !w.take(n) {
			return false
		}
		for _, e := range v {
			if !w.add(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		if len(v) == 0 {
			return w.take(2)
		}
		n := int64(2 + len(v) - 1)
		if w.indent {
			n += int64(len(v))*(1+2*(depth+1)) + 1 + 2*depth
		}
		if !w.take(n) {
			return false
		}
		for k, e := range v {
			n := JSONStringSize(k) + 1
			if w.indent {
				n++ // the space after the colon
			}
			if !w.take(n) || !w.add(e, depth+1) {
				return false
			}
		}
		return true
	}
	// Other values (typed collections, times): their estimated size, twice
	// over and indented as deep as they sit, errs high.
	if w.left < 0 {
		return false
	}
	return w.take(2*SizeWithin(v, w.left/2+1) + 2*depth)
}

// JSONStringSize is the length of s as json.Marshal writes it: quoted, with
// HTML characters, controls, U+2028, U+2029 and invalid bytes escaped.
func JSONStringSize(s string) int64 { return jsonStringSize(s, true) }

// JSONStringSizeNoHTML is JSONStringSize with HTML escaping off, as an
// encoder with SetEscapeHTML(false) writes s: '<', '>' and '&' one byte.
func JSONStringSizeNoHTML(s string) int64 { return jsonStringSize(s, false) }

func jsonStringSize(s string, html bool) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || html && (c == '<' || c == '>' || c == '&'):
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}

// uniqKey buckets the elements uniq compares: runtime.Equal(x, y) implies
// that x and y have one key (numbers of any kind by their value as a
// float64, collections by their length), so that an element is compared
// only with the kept elements of its bucket rather than with all of them.
type uniqKey struct {
	kind uint8
	f    float64
	s    string
	i    int64
}

const (
	keyNil = iota
	keyBool
	keyNumber
	keyString
	keyTime
	keyDuration
	keyCollection
	keyOther
)

func keyOf(x any) uniqKey {
	switch v := x.(type) {
	case nil:
		return uniqKey{kind: keyNil}
	case bool:
		if v {
			return uniqKey{kind: keyBool, i: 1}
		}
		return uniqKey{kind: keyBool}
	case string:
		return uniqKey{kind: keyString, s: v}
	case float64:
		return uniqKey{kind: keyNumber, f: v}
	case int:
		return uniqKey{kind: keyNumber, f: float64(v)}
	case time.Time:
		return uniqKey{kind: keyTime, i: v.Unix(), f: float64(v.Nanosecond())}
	case time.Duration:
		return uniqKey{kind: keyDuration, i: int64(v)}
	}
	if runtime.IsNil(x) {
		return uniqKey{kind: keyNil}
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uniqKey{kind: keyNumber, f: float64(rv.Int())}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uniqKey{kind: keyNumber, f: float64(rv.Uint())}
	case reflect.Float32, reflect.Float64:
		return uniqKey{kind: keyNumber, f: rv.Float()}
	case reflect.Slice, reflect.Array, reflect.Map:
		return uniqKey{kind: keyCollection, i: int64(rv.Len())}
	}
	return uniqKey{kind: keyOther}
}

// uniq is the uniq builtin (the elements of an array, each kept when no
// element kept before equals it, by runtime.Equal) in time linear in the
// array but for elements that may be equal: the builtin compares every
// element with every one kept, n² deep comparisons uncharged. Each
// comparison made is charged before it is, by the sizes compared.
func (b *exprBudget) uniq(x any) (any, error) {
	rv := reflect.ValueOf(x)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("cannot uniq %s", k)
	}
	n := rv.Len()
	ret := []any{}
	buckets := make(map[uniqKey][]int, min(n, 1024))
	for i := 0; i < n; i++ {
		e := rv.Index(i).Interface()
		k := keyOf(e)
		seen := false
		for _, j := range buckets[k] {
			if err := b.charge(1+b.compareCost(e, ret[j]), 0); err != nil {
				return nil, err
			}
			if runtime.Equal(e, ret[j]) {
				seen = true
				break
			}
		}
		if !seen {
			buckets[k] = append(buckets[k], len(ret))
			ret = append(ret, e)
		}
	}
	return ret, nil
}

// What loading a time zone costs (timezone(), date(…, layout, zone)):
// time.LoadLocation reads and parses the zone's data each time, about 8 µs
// and 2.6 KB measured for a valid name. A name it does not know costs more
// (55 µs) but fails the evaluation.
const (
	timezoneSteps = 100
	timezoneBytes = 4 << 10
)

// dateCost is what date(…) costs: a parse is about 5 ns a byte of the text
// and layout; without a layout, the seven layouts date tries are each
// parsed, every failure quoting the text in its error; a named zone is
// loaded.
func dateCost(args []any) (steps, bytes int64) {
	if _, ok := first(args).(*time.Location); ok {
		args = args[1:]
	}
	strLen := func(i int) int64 {
		if i < len(args) {
			if s, ok := args[i].(string); ok {
				return int64(len(s))
			}
		}
		return 0
	}
	text := strLen(0)
	switch len(args) {
	case 0, 1:
		return 1 + 7*(1+text/16), 7 * (64 + 2*text)
	case 2:
		return 1 + (text+strLen(1))/16, 64 + 2*text
	}
	return 1 + timezoneSteps + (text+strLen(1))/16, timezoneBytes + 64 + 2*text
}
