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

// stainlessMinBackoff is the shortest wait the OpenAI and Anthropic SDKs
// make before retry number retry+1 when the server names none: 0.5 s
// doubling per retry, capped at 8 s, less up to a quarter of jitter.
func stainlessMinBackoff(retry int) time.Duration {
	d := 8 * time.Second
	if retry < 5 {
		d = time.Duration(0.5 * float64(time.Second) * math.Pow(2, float64(retry)))
	}
	return d - d/4
}

// retryGate is an OpenAI/Anthropic SDK middleware that holds the SDK's own
// retry loop to this package's policy. The SDKs retry 408, 409, 429 and 5xx
// replies and honour Retry-After, but may wait past the caller's deadline
// (the Anthropic SDK with no bound at all). Both SDKs obey an
// x-should-retry header above the status, so the gate sets it to "false" on
// a reply that must not be retried: one that is not 429/5xx, or whose wait
// would end past the request context's deadline or beyond maxRetryWait.
// The call then fails at once with the provider's own error.
func retryGate(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 {
		return res, err
	}
	if res.Header == nil {
		res.Header = http.Header{}
	}
	if !retryableStatus(res.StatusCode) {
		res.Header.Set("X-Should-Retry", "false")
		return res, nil
	}
	wait, ok := retryAfter(res.Header)
	if !ok {
		// The SDKs count attempts in this header, which they set on
		// every attempt.
		n, _ := strconv.Atoi(req.Header.Get("X-Stainless-Retry-Count"))
		wait = stainlessMinBackoff(n)
	}
	deadline, hasDeadline := req.Context().Deadline()
	if wait > maxRetryWait || (hasDeadline && time.Now().Add(wait).After(deadline)) {
		res.Header.Set("X-Should-Retry", "false")
	}
	return res, nil
}
