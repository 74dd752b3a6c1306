package egress

import (
	"fmt"

	"github.com/runnerd/lambda-runner/protocol"
)

// Error is a failure to report on the node. Message is safe to show: it
// never contains header values, query values or bodies. Code is
// protocol.CodeHTTPBlocked when a rule (URL, policy, bound secret, address
// guard) refused the request, protocol.CodeHTTPError when the request was
// allowed but failed (transport, timeout, limits, undecodable body).
type Error struct {
	Code    protocol.Code
	Message string
}

// Error returns the message; the code is for programs, see Code.
func (e *Error) Error() string { return e.Message }

func blocked(format string, args ...any) *Error {
	return &Error{Code: protocol.CodeHTTPBlocked, Message: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) *Error {
	return &Error{Code: protocol.CodeHTTPError, Message: fmt.Sprintf(format, args...)}
}
