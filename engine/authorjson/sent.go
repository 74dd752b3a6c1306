package authorjson

import (
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
)

// The sizes of what others write of an author's value: the SDKs behind
// model and tool calls encode a request themselves, with encoding/json's
// HTML escaping (a '<' is six bytes, \u003c) or close to it, and net/http
// escapes a URL's query.

// SentStringSize is s as a JSON string with HTML escaping on.
func SentStringSize(s string) int64 { return lang.JSONStringSize(s) }

// HTMLEscaped counts the characters of v's strings, keys included, that
// HTML escaping writes as six bytes rather than one: v's JSON with HTML
// escaping on is SizeWithin's size plus five bytes for each.
func HTMLEscaped(v any) int64 { return htmlEscaped(v, 0) }

func htmlEscaped(v any, depth int) int64 {
	if depth > MaxDepth {
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

// QuerySize is at most what the URL of an http node takes once its query
// is escaped and appended: each key once per value, each value as text
// (a number or boolean at most 32 bytes).
func QuerySize(rawURL string, q map[string]any) int64 {
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
