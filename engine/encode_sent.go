package engine

import (
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/models"
)

// The SDKs behind model and tool calls encode a request themselves, with
// encoding/json's HTML escaping (a '<' is six bytes, \u003c) or close to
// it. What they will write of the author's parts is sized here as that
// escaping writes it and charged to the execution's memory budget before
// the call (chargeAuthor, as encodeAuthor charges what the runner encodes
// itself), held until the call returns: sixteen model nodes whose prompt
// is 4 MB of '<' hold 24 MB each while their requests are written, and
// that is counted (times what the SDK holds while it writes it) before any
// of it is allocated.

// What an SDK holds while it writes a request, per byte written, at most:
// the body, the buffers it grows through and the copies it keeps for a
// retry. Measured with 16 MB of prompts of control characters, quotes and
// U+2028 (TestHostileModelPromptEncoding): openai-go 6.6–7.7 times,
// anthropic-sdk-go 3.2–6, Bedrock's 1.7; the MCP client (encoding/json) 2.5.
const (
	modelRequestHeld = 10 // above the most measured, for the collector's lag
	toolArgsHeld     = 4
)

// sentStringSize is s as a JSON string with HTML escaping on.
func sentStringSize(s string) int64 { return lang.JSONStringSize(s) }

// modelRequestSize is what a provider's SDK writes of req, at least: its
// texts escaped, each turn's and tool's framing at a small constant.
func modelRequestSize(req models.Request) int64 {
	n := sentStringSize(req.System) + int64(len(req.JSONSchema))
	for _, m := range req.Messages {
		n += sentStringSize(m.Content) + sentStringSize(m.ToolCallID) + 32
		for _, tc := range m.ToolCalls {
			n += sentStringSize(tc.ID) + sentStringSize(tc.Name) + int64(len(tc.Arguments)) + 32
		}
	}
	for _, t := range req.Tools {
		n += sentStringSize(t.Name) + sentStringSize(t.Description) + int64(len(t.InputSchema)) + 32
	}
	return n
}

// sentValueSize is v's JSON as encoding/json writes it with HTML escaping
// on, refused over limit as sizeAuthor refuses (what names it).
func sentValueSize(what string, v any, limit int64) (int64, error) {
	n, err := sizeAuthor(what, v, limit)
	if err != nil {
		return 0, err
	}
	// v fits in n bytes, so this walk visits fewer than n elements.
	return n + 5*htmlEscaped(v, 0), nil
}

// htmlEscaped counts the characters of v's strings, keys included, that
// HTML escaping writes as six bytes rather than one.
func htmlEscaped(v any, depth int) int64 {
	if depth > maxJSONDepth {
		return 0
	}
	count := func(s string) int64 {
		return int64(strings.Count(s, "<") + strings.Count(s, ">") + strings.Count(s, "&"))
	}
	switch t := v.(type) {
	case string:
		return count(t)
	case []string:
		var n int64
		for _, s := range t {
			n += count(s)
		}
		return n
	case []any:
		var n int64
		for _, e := range t {
			n += htmlEscaped(e, depth+1)
		}
		return n
	case map[string]any:
		var n int64
		for k, e := range t {
			n += count(k) + htmlEscaped(e, depth+1)
		}
		return n
	}
	return 0
}

// urlHeld is what net/http holds of a URL per byte as it is written: the
// escaped query, the URL's string, the request line.
const urlHeld = 4

// urlEscapedSize is at most what URL escaping writes of s: three bytes
// for each byte outside the unreserved set, one for the rest.
func urlEscapedSize(s string) int64 {
	n := int64(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~') {
			n += 2
		}
	}
	return n
}

// querySize is at most what the URL of an http node takes once its query
// is escaped and appended: each key once per value, each value as text
// (a number or boolean at most 32 bytes).
func querySize(rawURL string, q map[string]any) int64 {
	n := urlEscapedSize(rawURL)
	var value func(k string, v any, depth int)
	value = func(k string, v any, depth int) {
		switch t := v.(type) {
		case string:
			n += urlEscapedSize(k) + urlEscapedSize(t) + 2
		case []any:
			if depth == 0 {
				for _, e := range t {
					value(k, e, 1)
				}
			}
		default:
			n += urlEscapedSize(k) + 34
		}
	}
	for k, v := range q {
		value(k, v, 0)
	}
	return n
}
