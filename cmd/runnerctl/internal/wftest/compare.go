package wftest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

// matchURL reports whether url matches the glob pattern: '*' matches any
// run of characters but '/', "**" any run at all.
func matchURL(pattern, url string) bool {
	if pattern == "" {
		return false
	}
	// Backtracking over at most the pattern's stars; both are short.
	var match func(p, s string) bool
	match = func(p, s string) bool {
		for len(p) > 0 {
			if strings.HasPrefix(p, "**") {
				rest := strings.TrimLeft(p, "*")
				for i := len(s); i >= 0; i-- {
					if match(rest, s[i:]) {
						return true
					}
				}
				return false
			}
			if p[0] == '*' {
				rest := p[1:]
				for i := 0; i <= len(s); i++ {
					if match(rest, s[i:]) {
						return true
					}
					if i < len(s) && s[i] == '/' {
						return false
					}
				}
				return false
			}
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
		return len(s) == 0
	}
	return match(pattern, url)
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// decode is raw as a generic value (nil for none).
func decode(raw json.RawMessage) any {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// diff is one difference: at path, what was expected and what was got.
type diff struct {
	Path     string `json:"path"`
	Expected any    `json:"expected"`
	Got      any    `json:"got"`
}

func (d diff) String() string {
	return fmt.Sprintf("%s: expected %s, got %s", d.Path, show(d.Expected), show(d.Got))
}

// show is v as JSON, cut for a report line.
func show(v any) string {
	if v == nil {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// diffJSON appends the differences between want and got under path: each
// member and element where they differ, the values whole otherwise.
func diffJSON(out []diff, path string, want, got any) []diff {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return append(out, diff{path, want, got})
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = diffJSON(out, path+"."+member(k), w[k], g[k])
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return append(out, diff{path, want, got})
		}
		for i := range w {
			out = diffJSON(out, path+"["+strconv.Itoa(i)+"]", w[i], g[i])
		}
		return out
	}
	if !jsonEqual(want, got) {
		out = append(out, diff{path, want, got})
	}
	return out
}

// member is a key in a path: bare when it is an identifier, quoted else.
func member(k string) string {
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

func itoa(i int) string { return strconv.Itoa(i) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
