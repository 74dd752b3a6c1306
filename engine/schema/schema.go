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
	// MaxComparisons bounds what one validation may compare with enum
	// and const values: the value's parts, times the most values one part
	// may be compared with. The library compares in turn, each comparison
	// 60–300 ns here: an enum of 20,000 strings applied to the items of
	// an array of 20,000 took 117 s, and a validation cannot be stopped.
	MaxComparisons = 4_000_000
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
	// comparisons is the most enum and const values one part of a value
	// may be compared with.
	comparisons int

	detailOnce sync.Once
	detailErr  error
	wrapper    *jsonschema.Resolved // see details.go
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
		raw: bytes.Clone(raw), rs: rs, nodes: c.nodes, byPtr: c.byPtr, dynamic: c.dynamic, comparisons: c.comparisons,
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
}

// Validate checks v, a value decoded from JSON (float64 numbers), against
// the schema. It returns nil when v is valid, else its failing leaves,
// ordered by where they were found.
func (s *Schema) Validate(v any) (leaves []Leaf) {
	if depth(v, 0) > MaxInstanceDepth {
		return []Leaf{{Msg: fmt.Sprintf("the value nests more than %d levels deep, the most a schema is applied to", MaxInstanceDepth)}}
	}
	if s.comparisons > 0 {
		if n := parts(v, MaxComparisons/s.comparisons+1); n*s.comparisons > MaxComparisons {
			return []Leaf{{Msg: fmt.Sprintf("the value has at least %d parts, each of which the schema may compare with %d enum and const values: "+
				"over the %d comparisons one validation may make (use a shorter enum, or a smaller value)", n, s.comparisons, MaxComparisons)}}
		}
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

// parts counts v's values, v itself and every member and item at every
// depth, stopping at limit.
func parts(v any, limit int) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if n >= limit {
				break
			}
			n += parts(e, limit-n)
		}
	case []any:
		for _, e := range v {
			if n >= limit {
				break
			}
			n += parts(e, limit-n)
		}
	}
	return n
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
