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
		// One or more labels, then the rest: the rest has as many labels
		// as the host's end it can match, so only that end is tried.
		labels := strings.Count(rest, ".") + 1
		i := len(host)
		for ; labels > 0 && i > 0; labels-- {
			i = strings.LastIndexByte(host[:i], '.')
			if i < 0 {
				return false
			}
		}
		return i > 0 && matchSegments(rest, host[i+1:], '.')
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
	case len(pattern) > MaxPattern:
		return fmt.Errorf("pattern of %d bytes, more than the %d one may have", len(pattern), MaxPattern)
	}
	return nil
}

// ValidateHost is Validate for a host pattern, which also refuses an empty
// label (".", "a..b", ".example.com"): no host name has one, so such a
// pattern could never match, and an allow or deny list holding it would
// silently do less than its author meant. One trailing dot is a fully
// qualified name's, and is ignored as MatchHost ignores it.
func ValidateHost(pattern string) error {
	if err := Validate(pattern); err != nil {
		return err
	}
	h := strings.TrimSuffix(pattern, ".")
	if h == "" || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return errors.New("a host pattern has no empty label (nothing between two dots, or before the first)")
	}
	return nil
}

// MaxPattern is the longest pattern Validate accepts. Matching takes time
// in proportion to the pattern and the resource, and every action is
// matched against whole lists of patterns.
const MaxPattern = 1 << 10

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// matchSegments matches pattern against s where '*' never crosses sep:
// segment by segment, each in time linear in its length. (One backtracking
// loop over the whole text was quadratic: "workflow:*aaa…ab" against a
// workflow id of 300,000 a's took 31 s, and nothing could interrupt it.)
func matchSegments(pattern, s string, sep byte) bool {
	for {
		pi := strings.IndexByte(pattern, sep)
		si := strings.IndexByte(s, sep)
		if pi < 0 || si < 0 {
			return pi < 0 && si < 0 && matchSegment(pattern, s)
		}
		if !matchSegment(pattern[:pi], s[:si]) {
			return false
		}
		pattern, s = pattern[pi+1:], s[si+1:]
	}
}

// matchSegment matches one segment, where '*' matches any run of bytes:
// the literal before the first '*' must start s, the one after the last
// must end it, and those between are found in order, each as early as it
// can be (the earliest place never rules out a later match).
func matchSegment(pattern, s string) bool {
	first := strings.IndexByte(pattern, '*')
	if first < 0 {
		return pattern == s
	}
	last := strings.LastIndexByte(pattern, '*')
	head, tail := pattern[:first], pattern[last+1:]
	if len(head)+len(tail) > len(s) || !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		return false
	}
	s = s[len(head) : len(s)-len(tail)]
	// The literals between the first star and the last, in order.
	for mid := pattern[first+1 : max(first+1, last)]; mid != ""; {
		var chunk string
		chunk, mid, _ = strings.Cut(mid, "*")
		i := strings.Index(s, chunk)
		if i < 0 {
			return false
		}
		s = s[i+len(chunk):]
	}
	return true
}
