package models

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// DefaultMaxRetries is how many times a call is retried when
// [Clients.MaxRetries] is zero.
const DefaultMaxRetries = 2

// maxRetryWait is the longest server-directed wait a call honours; a longer
// Retry-After fails the call at once, as the OpenAI SDK does by default.
const maxRetryWait = 2 * time.Minute

// retryableStatus reports whether a reply with this status is retried:
// rate limiting and server errors, nothing else.
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryAfter parses the server's requested wait from h, in the order the
// SDKs read it: retry-after-ms, x-amz-retry-after (milliseconds), then
// Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header) (time.Duration, bool) {
	for _, name := range []string{"Retry-After-Ms", "X-Amz-Retry-After"} {
		if v := h.Get(name); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
				return durationOf(ms, time.Millisecond), true
			}
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && !math.IsInf(s, 0) {
			return durationOf(s, time.Second), true
		}
		// The SDKs accept only RFC 1123 dates; so does this, to agree
		// with the wait they will really make.
		if t, err := time.Parse(time.RFC1123, v); err == nil {
			return max(0, time.Until(t)), true
		}
	}
	return 0, false
}

// durationOf converts n units to a Duration, saturating instead of
// overflowing.
func durationOf(n float64, unit time.Duration) time.Duration {
	d := n * float64(unit)
	if d >= math.MaxInt64 || math.IsNaN(d) {
		return math.MaxInt64
	}
	return time.Duration(d)
}
