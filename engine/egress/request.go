package egress

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/runnerd/lambda-runner/internal/httpfield"
	"github.com/runnerd/lambda-runner/protocol"
)

// Response types accepted in Request.ResponseType.
const (
	ResponseAuto = "auto" // JSON when the content type says so and the body parses, else text
	ResponseJSON = "json" // JSON, or an HTTP_ERROR
	ResponseText = "text" // the body as a string
)

// Request is one http node call, after templating.
type Request struct {
	// Method defaults to GET and is sent upper-case.
	Method string
	// URL is absolute, http or https, without userinfo.
	URL string
	// Query is appended to the URL's own query in key order. Values are
	// strings, numbers, booleans or arrays of those (the key repeats);
	// null values are left out.
	Query map[string]any
	// Headers to send. Host cannot be set: it would let a request name one
	// host to the policy and another to the server.
	Headers map[string]string
	// Body is nil for none; a string is sent as text/plain (UTF-8) and
	// []byte as application/octet-stream unless Headers set Content-Type;
	// a json.RawMessage is sent as it is, as JSON; anything else is
	// encoded as JSON.
	Body any
	// Timeout is the node's timeoutMs; 0 means the policy's or the
	// runner's. The shortest of the three, and ctx's deadline, applies.
	Timeout time.Duration
	// ResponseType is "auto" (the default), "json" or "text".
	ResponseType string
	// MaxDecoded, when positive, bounds what a JSON body decodes to, by
	// lang.SizeOf's count (the node's output cap): a body that would hold
	// more is refused before it is decoded (jsonweight).
	MaxDecoded int64
	// Bound are the host-bound secrets whose values this request carries
	// anywhere (URL, query, headers or body). A hop to a host outside any
	// of their Hosts is refused. Secrets without Hosts are ignored here.
	Bound []protocol.Secret
	// Authorize is called before every hop, the first request and each
	// redirect, with the lower-case host (no port) once the URL and policy
	// checks passed. A non-nil error stops the request and Do returns that
	// very error, so the engine recognises its own permission errors.
	Authorize func(ctx context.Context, host string) error
}

// ValidResponseType reports whether t is a valid Request.ResponseType, so
// that a static node can be rejected before the execution starts.
func ValidResponseType(t string) bool {
	switch t {
	case "", ResponseAuto, ResponseJSON, ResponseText:
		return true
	}
	return false
}

// normMethod validates and upper-cases a method.
func normMethod(m string) (string, error) {
	if m == "" {
		return http.MethodGet, nil
	}
	if !httpfield.ValidName(m) {
		return "", failed("invalid HTTP method")
	}
	m = strings.ToUpper(m)
	if m == http.MethodConnect {
		// CONNECT opens a tunnel; the node speaks HTTP requests only.
		return "", blocked("method CONNECT is not supported")
	}
	return m, nil
}

// buildHeader validates r.Headers. Errors name the header, never its value.
func buildHeader(r *Request) (http.Header, error) {
	h := make(http.Header, len(r.Headers)+1)
	names := make([]string, 0, len(r.Headers))
	for k := range r.Headers {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic order when two names differ in case only
	for _, k := range names {
		v := r.Headers[k]
		if !httpfield.ValidName(k) {
			return nil, failed("header name %q is not valid", k)
		}
		if http.CanonicalHeaderKey(k) == "Host" {
			return nil, blocked("the Host header cannot be set: the URL names the host")
		}
		if !validHeaderValue(v) {
			return nil, failed("header %s: value contains control characters", k)
		}
		h.Add(k, v)
	}
	return h, nil
}

// validHeaderValue refuses CR, LF, NUL and other controls (tab is allowed),
// which could split or smuggle headers.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// encodeBody renders r.Body and the content type it implies.
func encodeBody(body any) (data []byte, contentType string, err error) {
	switch b := body.(type) {
	case nil:
		return nil, "", nil
	case string:
		return []byte(b), "text/plain; charset=utf-8", nil
	case json.RawMessage:
		// Encoded by the caller (the engine's encoder of author values,
		// which sized and charged it): sent as it is, not copied again.
		return b, "application/json", nil
	case []byte:
		return b, "application/octet-stream", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Bodies go to APIs, not HTML pages: keep <, > and & as written.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, "", failed("request body cannot be encoded as JSON")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), "application/json", nil
}
