package toolsets

import (
	"net/http"
	"net/url"
)

// headerTransport adds a toolset's headers to every request of its session:
// POSTs, the DELETE that ends it, and any GET. The MCP SDK has no header
// option of its own; a RoundTripper is how its HTTPClient field is meant to
// be customised. It also sees the cancellation notices of calls given up
// begin and end, for Close (see notice.go).
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	// origin is the scheme and host of the toolset URL. Headers are only
	// added to requests for it: http.Client drops credentials when a redirect
	// leaves the host, and re-adding them here would undo that.
	origin url.URL
}

func newHeaderTransport(base http.RoundTripper, endpoint string, headers map[string]string) *headerTransport {
	t := &headerTransport{base: base, headers: make(http.Header, len(headers))}
	for name, value := range headers {
		t.headers.Set(name, value)
	}
	if u, err := url.Parse(endpoint); err == nil {
		t.origin = url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if end := noticeBegins(req); end != nil {
		// The notice is a notification: the server answers 202 with no
		// body, so it has ended when RoundTrip returns.
		defer end()
	}
	if len(t.headers) == 0 || req.URL.Scheme != t.origin.Scheme || req.URL.Host != t.origin.Host {
		return t.base.RoundTrip(req)
	}
	// A RoundTripper must not modify the request it is given.
	req = req.Clone(req.Context())
	for name, values := range t.headers {
		req.Header[name] = values
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base
// transport.
func (t *headerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
