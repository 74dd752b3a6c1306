package toolsets

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/runnerd/lambda-runner/internal/httpfield"
	"github.com/runnerd/lambda-runner/protocol"
)

// TransportStreamableHTTP is the only toolset transport: the MCP streamable
// HTTP transport. An empty transport means this one.
const TransportStreamableHTTP = "streamable-http"

// maxNameLen bounds a toolset name, which appears in events, errors and
// permission resources ("toolset/tool").
const maxNameLen = 64

// reservedHeaders are set by the MCP transport or by net/http itself: a
// toolset header with one of these names would break the protocol or be
// silently ignored, so it is refused up front.
var reservedHeaders = []string{
	"Accept",
	"Connection",
	"Content-Length",
	"Content-Type",
	"Host",
	"Keep-Alive",
	"Last-Event-Id",
	"Mcp-Protocol-Version",
	"Mcp-Session-Id",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// Validate checks toolset definitions before an execution is accepted. path
// is where defs sit in the request, usually "runtime.toolsets".
//
// A name is required, unique, at most 64 characters of letters, digits, '_',
// '-' and '.' (a name appears in "toolset/tool" permission resources, so it
// cannot hold '/' or glob characters). The url is an absolute http or https
// URL without userinfo (credentials belong in headers, which are scrubbed
// from errors). The transport is empty or "streamable-http". timeoutMs is not
// negative. Header names are HTTP tokens, not reserved by the transport, and
// not repeated in another case; values hold no control character.
//
// Validation is complete rather than fail-fast: the error joins
// (errors.Join) one *protocol.Detail per problem, in definition order.
func Validate(path string, defs []protocol.Toolset) error {
	var errs []error
	fail := func(path, format string, args ...any) {
		errs = append(errs, &protocol.Detail{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	first := map[string]int{} // name -> index of its first definition
	for i, d := range defs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if msg := checkName(d.Name); msg != "" {
			fail(p+".name", "%s", msg)
		} else if j, dup := first[d.Name]; dup {
			fail(p+".name", "%q is already the name of %s[%d]", d.Name, path, j)
		} else {
			first[d.Name] = i
		}
		if msg := checkURL(d.URL); msg != "" {
			fail(p+".url", "%s", msg)
		}
		if d.Transport != "" && d.Transport != TransportStreamableHTTP {
			fail(p+".transport", "%q is not supported: the only transport is %q", d.Transport, TransportStreamableHTTP)
		}
		if d.TimeoutMs < 0 {
			fail(p+".timeoutMs", "must not be negative (got %d)", d.TimeoutMs)
		}
		checkHeaders(p+".headers", d.Headers, fail)
	}
	return errors.Join(errs...)
}

func checkName(name string) string {
	if name == "" {
		return "is required"
	}
	if len(name) > maxNameLen {
		return fmt.Sprintf("is longer than %d characters", maxNameLen)
	}
	for _, r := range name {
		if !isNameRune(r) {
			return fmt.Sprintf("%q: use only letters, digits, '_', '-' and '.'", name)
		}
	}
	return ""
}

func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '_' || r == '-' || r == '.'
}

func checkURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	// The URL is not echoed: its query may hold a key.
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "must be an absolute http or https URL"
	}
	if u.Host == "" || u.Hostname() == "" {
		return "has no host"
	}
	if u.User != nil {
		return "must not contain credentials (user:password@); send them in headers"
	}
	return ""
}

func checkHeaders(path string, headers map[string]string, fail func(path, format string, args ...any)) {
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic error order
	canonical := map[string]string{}
	for _, name := range names {
		p := fmt.Sprintf("%s[%q]", path, name)
		c := http.CanonicalHeaderKey(name)
		switch {
		case !httpfield.ValidName(name):
			fail(p, "is not a valid header name")
		case slices.Contains(reservedHeaders, c):
			fail(p, "is set by the MCP transport and cannot be overridden")
		case canonical[c] != "":
			fail(p, "repeats header %q (header names are case-insensitive)", canonical[c])
		default:
			canonical[c] = name
		}
		if !validHeaderValue(headers[name]) {
			// Never echo the value: it is likely a credential.
			fail(p, "value contains a control character")
		}
	}
}

// validHeaderValue refuses what net/http would refuse or what would split a
// header: control characters other than horizontal tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
