// Package schema compiles and applies the JSON Schemas a request carries (a
// workflow's input schema, a model node's json schema) with
// google/jsonschema-go as published, behind guards of its own.
//
// The library validates draft 2020-12 but leaves three things to its
// caller, which this package does before a schema reaches it:
//
//   - the meta-schema: every keyword's value is checked here (types, non-
//     negative integers, type names, unique required names, patterns that
//     compile), and keywords of other drafts, $vocabulary, remote
//     references and $schema values other than draft 2020-12 are refused;
//   - termination: a cycle of references through keywords that apply to
//     the same value (`$ref`, `allOf`, `not`, `if`, ...) overflows the
//     library's stack, a fatal error; it is refused, and so is a schema that
//     makes one value be checked against more than [MaxApplied] subschemas
//     (exponential fan-out through `$defs`);
//   - details: the library stops at the first failure without its place;
//     [Schema.Validate] reports every failing leaf at its instance
//     location, by validating sub-values against sub-schemas.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Draft is the only $schema a schema may name: draft 2020-12, also the
// default.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Limits of what one schema may make the validator do.
const (
	// MaxNesting bounds how deep subschemas nest inside one another.
	MaxNesting = 64
	// MaxApplied bounds how many subschemas one value is checked against,
	// counting every path of $ref, allOf, anyOf, ... and of recursion
	// through properties and items down to MaxInstanceDepth.
	MaxApplied = 1000
	// MaxInstanceDepth is how deep a value may nest to be validated: the
	// schema's cost is counted down to it.
	MaxInstanceDepth = 128
	// MaxChecks bounds the checks one validation may make: the value's
	// parts (itself, every member and item), times the most checks the
	// schema makes of one part: each enum value, const, property, required
	// name and dependent of every subschema applied to it, which the
	// library goes through in turn, 50–300 ns each here, whatever the part
	// holds. A validation cannot be stopped once begun: an enum of 20,000
	// strings applied to the items of an array of 20,000 took 117 s, 8,000
	// properties applied to 200,000 empty objects over two minutes.
	MaxChecks = 4_000_000
	// MaxPatternInsts bounds the estimated programs of one schema's
	// pattern and patternProperties together (about 40 bytes of memory
	// and 0.2 µs of compiling each).
	MaxPatternInsts = 100_000
	// MaxPatternWork bounds the matching of pattern and patternProperties
	// one validation may do: the bytes of the value's text (strings and
	// member names) times the most program instructions matched against
	// one byte, up to about 20 ns each (a pattern of 2,000 instructions
	// took 3.3 s over 100 KB).
	MaxPatternWork = 100_000_000
	// maxLeaves bounds the details one validation reports.
	maxLeaves = 100
)

// baseURI is the URI a schema without an absolute $id is resolved against.
// A reference to it or below it is local; no other is ever loaded.
const baseURI = "https://runner.invalid/request.schema.json"

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	raw   []byte
	rs    *jsonschema.Resolved
	nodes []*node
	byPtr map[string]int
	// dynamic is set when the schema uses $dynamicRef: its meaning depends
	// on the path taken to it, so details are not split below the root.
	dynamic bool
	// checks and patternWork are what one part of a value, and one byte
	// of its text, may cost at each level of the value, the last for every
	// deeper one (MaxChecks, MaxPatternWork).
	checks, patternWork []int

	detailOnce sync.Once
	detailErr  error
	wrapper    *jsonschema.Resolved      // see details.go
	patterns   map[string]*regexp.Regexp // details.go: patternProperties, compiled
	width      int
	localOnce  []sync.Once
	local      []*jsonschema.Resolved
}

// Error is a problem with a schema: where in it (JSON pointer tokens) and
// what.
type Error struct {
	Loc []string
	Msg string
}

func (e *Error) Error() string {
	if len(e.Loc) == 0 {
		return e.Msg
	}
	return "/" + strings.Join(e.Loc, "/") + ": " + e.Msg
}

// Errors lists the problems a schema has, in document order.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Compile checks and compiles a schema written as JSON text. A schema that
// does not compile returns Errors. The Schema keeps a copy of raw, never
// raw itself: a request's schema is a slice of its body, and a compiled
// schema outlives the request in caches.
func Compile(raw []byte) (s *Schema, err error) {
	defer func() {
		// The guards are meant to leave the library nothing to panic on;
		// should one be missed, the request still ends in-band.
		if r := recover(); r != nil {
			s, err = nil, Errors{{Msg: fmt.Sprintf("the schema could not be compiled (%v)", r)}}
		}
	}()
	c, err := check(raw)
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(raw, &js); err != nil {
		return nil, Errors{{Msg: err.Error()}}
	}
	rs, err := js.Resolve(&jsonschema.ResolveOptions{BaseURI: baseURI, Loader: noLoader})
	if err != nil {
		return nil, Errors{{Msg: err.Error()}}
	}
	return &Schema{
		raw: bytes.Clone(raw), rs: rs, nodes: c.nodes, byPtr: c.byPtr, dynamic: c.dynamic, checks: c.checks, patternWork: c.patternWork,
		localOnce: make([]sync.Once, len(c.nodes)), local: make([]*jsonschema.Resolved, len(c.nodes)),
	}, nil
}

func noLoader(u *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("remote schema %q is not loaded: schemas must be self-contained", u)
}

// Leaf is one failing rule of a validation: the instance location (object
// member names and array indexes), the message, and for a missing or
// unexpected member the members.
type Leaf struct {
	Loc     []string
	Msg     string
	Members []string
	// Missing says Members are required members absent.
	Missing bool
	// Known, when not nil, lists what a misspelling may explain the
	// failure by: for unexpected Members, the member names the object's
	// schema declares; for Missing ones, the members the value has that
	// it does not declare; for a string Got outside an enum, the enum's
	// strings. It is a function, so that what a caller never asks for is
	// not listed.
	Known func() []string
	Got   string
}

// Validate checks v, a value decoded from JSON (float64 numbers), against
// the schema. It returns nil when v is valid, else its failing leaves,
// ordered by where they were found.
func (s *Schema) Validate(v any) (leaves []Leaf) {
	if depth(v, 0) > MaxInstanceDepth {
		return []Leaf{{Msg: fmt.Sprintf("the value nests more than %d levels deep, the most a schema is applied to", MaxInstanceDepth)}}
	}
	if msg := s.overWork(v); msg != "" {
		return []Leaf{{Msg: msg}}
	}
	defer func() {
		if r := recover(); r != nil {
			leaves = []Leaf{{Msg: fmt.Sprintf("the value could not be validated (%v)", r)}}
		}
	}()
	err := s.rs.Validate(v)
	if err == nil {
		return nil
	}
	return s.details(v, err)
}

// depth is how deep v nests, stopping past MaxInstanceDepth.
func depth(v any, d int) int {
	if d > MaxInstanceDepth {
		return d
	}
	m := d
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			m = max(m, depth(e, d+1))
		}
	case []any:
		for _, e := range v {
			m = max(m, depth(e, d+1))
		}
	}
	return m
}

// overWork says why validating v would pass MaxChecks or MaxPatternWork,
// or returns "".
func (s *Schema) overWork(v any) string {
	m := measure{checks: s.checks, patterns: s.patternWork}
	m.walk(v, 0)
	switch {
	case m.checkWork > MaxChecks:
		return fmt.Sprintf("validating the value would make more than %d checks (each enum and const value, property, required name and dependent "+
			"of every subschema applied to each of its parts, and it has at least %d): use a smaller schema or a smaller value", MaxChecks, m.parts)
	case m.patternWork > MaxPatternWork:
		return fmt.Sprintf("matching the schema's patterns with the value's text would take more than %d steps (the bytes of its strings and member names, "+
			"times the instructions of the patterns applied to them): use simpler patterns or a smaller value", MaxPatternWork)
	}
	return ""
}

// measure adds up what validating a value costs, part by part (itself,
// every member and item), stopping once past a bound.
type measure struct {
	checks, patterns       []int // Schema's, by level
	parts                  int
	checkWork, patternWork int
}

// at is w's weight for level d: its last for every deeper one.
func at(w []int, d int) int {
	if len(w) == 0 {
		return 0
	}
	return w[min(d, len(w)-1)]
}

func (m *measure) over() bool { return m.checkWork > MaxChecks || m.patternWork > MaxPatternWork }

func (m *measure) walk(v any, d int) {
	m.parts++
	m.checkWork += at(m.checks, d)
	switch v := v.(type) {
	case string:
		m.patternWork += len(v) * at(m.patterns, d)
	case map[string]any:
		for k, e := range v {
			if m.over() {
				return
			}
			m.patternWork += len(k) * at(m.patterns, d+1)
			m.walk(e, d+1)
		}
	case []any:
		for _, e := range v {
			if m.over() {
				return
			}
			m.walk(e, d+1)
		}
	}
}

// innermost is the error the library wrapped in "validating …" layers: the
// one naming the keyword that failed.
func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
