// Package nodes holds the built-in node types that compose no graph: set,
// fail, http, model, agent, tool and code, one file each, written against
// package engine's exported API (Kind, Compiler, Call, Step). Importing the
// package registers them, from the one list below, with
// engine.RegisterKind; a program that builds an Engine imports it for that
// side effect:
//
//	import _ "github.com/runnerd/lambda-runner/engine/nodes"
//
// A new node type is one file here and one line in kinds. The map and
// workflow nodes stay in package engine: the graphs they run are the
// engine's.
package nodes

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/engine"
)

// kinds are the node types of this package, by the name a document's
// node.type gives.
var kinds = []struct {
	name string
	kind engine.Kind
}{
	{"set", &setKind{}},
	{"fail", &failKind{}},
	{"model", &modelKind{}},
	{"agent", &agentKind{}},
	{"tool", &toolKind{}},
	{"http", &httpKind{}},
	{"code", &codeKind{}},
}

func init() {
	for _, k := range kinds {
		engine.RegisterKind(k.name, k.kind)
	}
}

// decodeJSON decodes raw into a generic value with float64 numbers, the
// representation expressions and templates work on.
func decodeJSON(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// maxMessage bounds the part of an error message that a server wrote: a
// node error travels in events and in nodes.<id>.error, not a body.
const maxMessage = 2000

// clipMessage cuts s to maxMessage bytes on a character boundary.
func clipMessage(s string) string { return clipText(s, maxMessage, "…") }

// clipText cuts s to limit bytes on a character boundary and marks the
// cut with tail.
func clipText(s string, limit int, tail string) string {
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + tail
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
