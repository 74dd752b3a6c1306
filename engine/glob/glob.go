// Package glob is the one definition of the patterns used by permissions,
// host tool policies, launch grants and HTTP allow/deny lists.
//
// Resource patterns (tools "toolset/tool", model roles, workflow ids) are
// case-sensitive; '*' matches any run of characters within one segment
// ('/' separates segments) and a pattern that is exactly "*" matches every
// resource.
//
// Host patterns are case-insensitive and ignore a trailing dot; '*' matches
// within one label ('.' separates labels), a leading "*." matches one or more
// labels of subdomain (so "*.example.com" matches "a.b.example.com" but not
// "example.com"), and "*" alone matches every host.
package glob

import (
	"errors"
	"fmt"
	"strings"
)

// MaxList is how many patterns one list of them may hold: permissions[],
// toolPolicies[], authorization.grants[], allowHosts, denyHosts, a secret's
// hosts. Every action is matched against a whole list, so the request's
// actions times its patterns is work done before and while it runs (5,000
// tool nodes under 50,000 permissions took 6 s to decide).
const MaxList = 1000

// CheckList reports a list of n patterns that holds more than MaxList.
func CheckList(n int) error {
	if n > MaxList {
		return fmt.Errorf("%d patterns, more than the %d one list may hold", n, MaxList)
	}
	return nil
}

// Match reports whether resource matches the resource pattern.
func Match(pattern, resource string) bool {
	if pattern == "*" {
		return true
	}
	return matchSegments(pattern, resource, '/')
}

// MatchHost reports whether host matches the host pattern.
func MatchHost(pattern, host string) bool {
	pattern = normalizeHost(pattern)
	host = normalizeHost(host)
	if pattern == "*" {
		return true
	}
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		// One or more labels, then the rest.
		for i := 0; i < len(host); i++ {
			if host[i] == '.' && i > 0 && matchSegments(rest, host[i+1:], '.') {
				return true
			}
		}
		return false
	}
	return matchSegments(pattern, host, '.')
}

// Validate reports why a pattern is unusable: empty, or containing
// characters that can never match.
func Validate(pattern string) error {
	switch {
	case pattern == "":
		return errors.New("empty pattern")
	case strings.ContainsAny(pattern, " \t\r\n"):
		return errors.New("pattern contains white space")
	case strings.Contains(pattern, "**"):
		return errors.New("'**' is not supported: '*' matches within one segment")
	}
	return nil
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// matchSegments matches pattern against s where '*' never crosses sep.
func matchSegments(pattern, s string, sep byte) bool {
	// Iterative wildcard matching with one backtrack point, reset at each
	// separator so that '*' stays inside its segment.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0 && s[mark] != sep:
			mark++
			i = mark
			p = star + 1
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
