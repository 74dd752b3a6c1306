package egress

import (
	"fmt"
)

// Error codes carried by *Error; they are the node error codes of the
// workflow http node.
const (
	// CodeBlocked: a rule (URL, policy, bound secret, address guard)
	// refused the request.
	CodeBlocked = "HTTP_BLOCKED"
	// CodeError: the request was allowed but failed (transport, timeout,
	// limits, undecodable body).
	CodeError = "HTTP_ERROR"
)

// Error is a failure to report on the node. Message is safe to show: it
// never contains header values, query values or bodies.
type Error struct {
	Code    string
	Message string
}

// Error returns the message; the code is for programs, see Code.
func (e *Error) Error() string { return e.Message }

func blocked(format string, args ...any) *Error {
	return &Error{Code: CodeBlocked, Message: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) *Error {
	return &Error{Code: CodeError, Message: fmt.Sprintf(format, args...)}
}
