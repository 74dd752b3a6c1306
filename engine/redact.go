package engine

import (
	"encoding/json"
	"slices"
	"strings"
)

// Redacted replaces every secret value in events, errors and logs.
const Redacted = "[REDACTED]"

// redactor replaces secret values, in their plain and JSON-escaped forms.
type redactor struct {
	r *strings.Replacer
}

func newRedactor(secrets []string) *redactor {
	// Longest first, so a secret that contains another is replaced whole.
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		pairs = append(pairs, s, Redacted)
		if j, err := json.Marshal(s); err == nil {
			if esc := string(j[1 : len(j)-1]); esc != s && !seen[esc] {
				seen[esc] = true
				pairs = append(pairs, esc, Redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return &redactor{}
	}
	return &redactor{r: strings.NewReplacer(pairs...)}
}

// String redacts s.
func (r *redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// JSON redacts marshaled JSON. The replacement holds no character that JSON
// escapes, so the result stays valid JSON.
func (r *redactor) JSON(b []byte) []byte {
	if r == nil || r.r == nil {
		return b
	}
	return []byte(r.r.Replace(string(b)))
}
