//go:build !noopenai || !noanthropic

package models

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// What the OpenAI and Anthropic providers share: both SDKs are generated
// by Stainless and retry alike. Built when either is.

// bodyText reads the start of a reply's body, which the SDKs keep readable
// on error replies.
func bodyText(res *http.Response) string {
	if res == nil || res.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4*maxMessageLen))
	return string(b)
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
