package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"
)

// The structure checks below walk a body once with encoding/json's token
// reader. They keep one frame per open array or object (the key being read
// and, for objects, the keys seen so far), so memory is bounded by the body;
// a path is only rendered when a problem is reported.

// frame is one open array or object of a walk.
type frame struct {
	obj bool
	key string // current member's key (objects)
	// index is the current element's index (arrays, -1 before the first);
	// in objects 1 while a member's value is awaited.
	index int
	// few holds an object's first keys (nfew of them), keys all of them
	// once there are more: most objects have a handful of members.
	few  [4]string
	nfew int
	keys map[string]struct{}
	loc  *locNode // Locate's trie node of this container, nil off every path
}

// Syntax is a body that is not JSON, with where it stopped being JSON.
type Syntax struct {
	Offset       int // byte offset
	Line, Column int // 1-based
	Reason       string
}

func (s *Syntax) Error() string {
	return fmt.Sprintf("malformed JSON at line %d, column %d (byte %d): %s", s.Line, s.Column, s.Offset, s.Reason)
}

// CheckStructure walks data once and reports what no decoder would: a
// duplicate object key anywhere (encoding/json keeps the last, a proxy may
// read the first) and nesting deeper than maxDepth (0: no cap of its own).
// Depth counts from the body: {"a":[1]} is 2 deep. A body that is not JSON
// gives a *Syntax; other problems are an *Invalid naming each path.
func CheckStructure(data []byte, maxDepth int) error {
	return checkStructure(walk, data, maxDepth)
}

type walker func(data []byte, value func(st []frame, start int, container bool) (*locNode, error), dup func(st []frame, key string)) error

// maxDuplicateDetails caps the duplicate keys reported one by one.
const maxDuplicateDetails = 100

func checkStructure(walk walker, data []byte, maxDepth int) error {
	inv := &Invalid{}
	dups := 0
	err := walk(data, func(st []frame, start int, container bool) (*locNode, error) {
		if container && maxDepth > 0 && len(st) >= maxDepth {
			return nil, &limitError{path: shortPath(st), max: maxDepth}
		}
		return nil, nil
	}, func(st []frame, key string) {
		// A 6-byte "a":1 repeated would give an 80-byte detail each.
		if dups++; dups <= maxDuplicateDetails {
			inv.Add(shortPath(st), "duplicate key %q: every key may appear once in an object", clip(key))
		}
	})
	if dups > maxDuplicateDetails {
		inv.Add("", "%d more duplicate keys", dups-maxDuplicateDetails)
	}
	var le *limitError
	if errors.As(err, &le) {
		inv.Add(le.path, "nested deeper than maxDepth (%d levels)", le.max)
		inv.tooDeep = true
		return inv
	}
	if err != nil {
		return err
	}
	return inv.Err()
}

type limitError struct {
	path string
	max  int
}

func (e *limitError) Error() string { return fmt.Sprintf("%s: nested deeper than %d", e.path, e.max) }

// walk reads data token by token. value is called where each value starts,
// with the frames enclosing it (the last one says which member or element
// it is) and whether it is an array or object; dup for each repeated key
// of an object, with the key's member current.
func walk(data []byte, value func(st []frame, start int, container bool) (*locNode, error), dup func(st []frame, key string)) error {
	if !json.Valid(data) {
		return walkTokens(data, value, dup)
	}
	return walkValid(data, value, dup)
}

// walkValid is walk for a body encoding/json has accepted.
func walkValid(data []byte, value func(st []frame, start int, container bool) (*locNode, error), dup func(st []frame, key string)) error {
	// Valid JSON (checked by encoding/json, the one parser) needs no
	// tokenizer to be walked: strings are skipped to their closing quote,
	// and a key is only copied out of the body to be remembered.
	var st []frame
	i := 0
	for {
		i = skipSpace(data, i)
		c := data[i]
		if c == '}' || c == ']' {
			st = st[:len(st)-1]
			i++
			if len(st) == 0 {
				return nil
			}
			continue
		}
		if f := top(st); f != nil && f.obj && f.index != 1 {
			end := skipString(data, i)
			// The key is read in place: keys live only while the body is
			// walked (frames, duplicate sets), and the body is not written
			// meanwhile; whatever outlives the walk (messages, paths) is
			// formatted into strings of its own.
			key := unsafe.String(unsafe.SliceData(data[i+1:]), end-1-(i+1))
			if bytes.IndexByte(data[i+1:end-1], '\\') >= 0 {
				// Its own variable: taking key's address would move every
				// key to the heap.
				var unquoted string
				_ = json.Unmarshal(data[i:end], &unquoted)
				key = unquoted
			}
			i = end
			readKey(st, key, dup)
			continue
		}
		advance(st)
		container := c == '{' || c == '['
		loc, err := value(st, i, container)
		if err != nil {
			return err
		}
		if container {
			st = append(st, frame{obj: c == '{', index: -1, loc: loc})
			i++
			continue
		}
		if c == '"' {
			i = skipString(data, i)
		} else {
			i = skipLiteral(data, i)
		}
		if len(st) == 0 {
			return nil
		}
	}
}

// readKey records that the member key of the innermost frame's object is
// read and its value comes next; dup is told if key was seen before.
func readKey(st []frame, key string, dup func(st []frame, key string)) {
	f := &st[len(st)-1]
	f.key, f.index = key, 1
	if f.seen(key) {
		dup(st, key)
	}
}

// seen records key as a member of f's object, reporting whether it
// already was one.
func (f *frame) seen(key string) bool {
	if f.keys == nil {
		for _, k := range f.few[:f.nfew] {
			if k == key {
				return true
			}
		}
		if f.nfew < len(f.few) {
			f.few[f.nfew] = key
			f.nfew++
			return false
		}
		f.keys = make(map[string]struct{}, 2*len(f.few))
		for _, k := range f.few {
			f.keys[k] = struct{}{}
		}
	}
	if _, ok := f.keys[key]; ok {
		return true
	}
	f.keys[key] = struct{}{}
	return false
}

func top(st []frame) *frame {
	if len(st) == 0 {
		return nil
	}
	return &st[len(st)-1]
}

// skipString returns the offset just past the string starting at i.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// walkTokens is walk for a body encoding/json refuses: it reports what it
// meets before the point of failure (nesting, duplicates) and then where
// the body stops being JSON.
func walkTokens(data []byte, value func(st []frame, start int, container bool) (*locNode, error), dup func(st []frame, key string)) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var st []frame
	for {
		start := skipSpace(data, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err == io.EOF {
			return syntaxAt(data, len(data), "unexpected end of JSON input")
		}
		if err != nil {
			return syntaxErr(data, err, int(dec.InputOffset()))
		}
		if s, ok := tok.(string); ok && len(st) > 0 && st[len(st)-1].obj && st[len(st)-1].index != 1 {
			// Inside an object, Token alternates keys and values.
			readKey(st, s, dup)
			continue
		}
		d, isDelim := tok.(json.Delim)
		if isDelim && (d == '}' || d == ']') {
			st = st[:len(st)-1]
		} else {
			advance(st)
			container := isDelim
			loc, err := value(st, start, container)
			if err != nil {
				return err
			}
			if container {
				st = append(st, frame{obj: d == '{', index: -1, loc: loc})
				continue
			}
		}
		if len(st) == 0 {
			// One top-level value: anything after it but space is an error.
			rest := int(dec.InputOffset())
			for rest < len(data) && (data[rest] == ' ' || data[rest] == '\t' || data[rest] == '\n' || data[rest] == '\r') {
				rest++
			}
			if rest < len(data) {
				return syntaxAt(data, rest, fmt.Sprintf("invalid character %s after top-level value", quoteChar(data[rest])))
			}
			return nil
		}
	}
}

// advance records that a value starts in the innermost open container.
func advance(st []frame) {
	if len(st) == 0 {
		return
	}
	f := &st[len(st)-1]
	if f.obj {
		f.index = 0 // the key's value is read
		return
	}
	f.index++
}

// skipLiteral returns the offset just past the number, true, false or null
// starting at i.
func skipLiteral(data []byte, i int) int {
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		default:
			return i
		}
	}
	return i
}

func syntaxErr(data []byte, err error, off int) error {
	// The token reader's offsets are relative to the value it was reading;
	// the whole-body checker's are absolute. Only paid on a bad body.
	var raw json.RawMessage
	if uerr := json.Unmarshal(data, &raw); uerr != nil {
		err = uerr
		off = len(data)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return syntaxAt(data, int(se.Offset)-1, strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return syntaxAt(data, len(data), "unexpected end of JSON input")
	}
	return syntaxAt(data, off, strings.TrimPrefix(err.Error(), "json: "))
}

func syntaxAt(data []byte, off int, reason string) *Syntax {
	off = min(max(off, 0), len(data))
	line, col := LineColumn(data, off)
	return &Syntax{Offset: off, Line: line, Column: col, Reason: reason}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return "'" + string(c) + "'"
}

// LineColumn returns the 1-based line and column (in bytes) of offset in
// data.
func LineColumn(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = offset - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// shortPath renders the path of the value being read in the innermost
// frame of st, as "workflow.nodes[2].with". Keys are clipped so that a
// hostile document cannot make one error detail as large as itself.
func shortPath(st []frame) string {
	var b strings.Builder
	for i, f := range st {
		if b.Len() > 512 {
			b.WriteString("…")
			break
		}
		if f.obj {
			b.WriteString(keySegment(i > 0, f.key))
			continue
		}
		b.WriteString("[" + strconv.Itoa(max(f.index, 0)) + "]")
	}
	return b.String()
}

func keySegment(dot bool, key string) string {
	if dot {
		return "." + clip(key)
	}
	return clip(key)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// locNode is a node of the trie of paths Locate looks for.
type locNode struct {
	keys   map[string]*locNode
	elems  map[int]*locNode
	offset int // where the value starts, -1 until seen
}

func (n *locNode) child(f *frame) *locNode {
	if f.obj {
		return n.keys[f.key]
	}
	return n.elems[f.index]
}

// Locate returns the byte offset at which the value at each path starts
// ("workflow.nodes[2].with.url"), in one walk of data. A path that is not
// in data (a missing member) gets the offset of its nearest ancestor that
// is; data that is not JSON gives no offsets.
func Locate(data []byte, paths []string) map[string]int {
	root := &locNode{offset: -1}
	ends := make(map[string][]*locNode, len(paths))
	deepest := 0
	for _, p := range paths {
		if _, done := ends[p]; done {
			continue
		}
		chain := []*locNode{root}
		n := root
		for _, seg := range splitPath(p) {
			var next *locNode
			if seg.key != nil {
				if next = n.keys[*seg.key]; next == nil {
					next = &locNode{offset: -1}
					if n.keys == nil {
						n.keys = map[string]*locNode{}
					}
					n.keys[*seg.key] = next
				}
			} else {
				if next = n.elems[seg.index]; next == nil {
					next = &locNode{offset: -1}
					if n.elems == nil {
						n.elems = map[int]*locNode{}
					}
					n.elems[seg.index] = next
				}
			}
			chain = append(chain, next)
			n = next
		}
		ends[p] = chain
		deepest = max(deepest, len(chain))
	}
	_ = walk(data, func(st []frame, start int, _ bool) (*locNode, error) {
		if len(st) > deepest && len(st) > maxLocateDepth {
			// Deeper than any path and than any decoder reads: the
			// decoder that reported the problems stopped here, so none
			// lies further on, and a body nested millions deep would have
			// its every level held (3 GB and 6 s for 6 MB of '[').
			return nil, errDeepest
		}
		n := root
		if len(st) > 0 {
			if n = st[len(st)-1].loc; n == nil {
				return nil, nil
			}
			n = n.child(&st[len(st)-1])
		}
		if n != nil {
			n.offset = start
		}
		return n, nil
	}, func([]frame, string) {})
	out := make(map[string]int, len(ends))
	for p, chain := range ends {
		for i := len(chain) - 1; i >= 0; i-- {
			if chain[i].offset >= 0 {
				out[p] = chain[i].offset
				break
			}
		}
	}
	return out
}

// maxLocateDepth is encoding/json's own nesting limit, far above the
// runner's (MaxDepth): a problem is never found deeper.
const maxLocateDepth = 10_000

// errDeepest ends Locate's walk past every path it looks for and past what
// any decoder reads.
var errDeepest = errors.New("deeper than every path")

type segment struct {
	key   *string
	index int
}

// splitPath splits a detail path into member keys and element indexes.
// Keys holding '.' or '[' cannot be told apart; such a path is located at
// the nearest ancestor that can.
func splitPath(p string) []segment {
	var out []segment
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return out
			}
			i, err := strconv.Atoi(p[1:end])
			if err != nil {
				return out
			}
			out = append(out, segment{index: i})
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			k := p[:end]
			out = append(out, segment{key: &k})
			p = p[end:]
		}
	}
	return out
}
