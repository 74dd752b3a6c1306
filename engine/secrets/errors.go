package secrets

import (
	"fmt"

	"github.com/runnerd/lambda-runner/protocol"
)

// Error is a refusal of the secret machinery: a bound on what an execution
// learns, or a batch's report its parent could not take. Its Code is the
// node error's the engine reports.
type Error struct {
	Code    protocol.Code
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code protocol.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
