package distribute

import (
	"errors"
	"fmt"

	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// Error is a failure of a distributed map with its protocol code: the
// engine makes it the map node's error (engine's codedError), as it does
// the secret machinery's.
type Error struct {
	Code    protocol.Code
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code protocol.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// coded reports whether err already carries the code the map fails with:
// this package's, or the secret machinery's for what a batch learned.
func coded(err error) bool {
	var de *Error
	var se *secrets.Error
	return errors.As(err, &de) || errors.As(err, &se)
}
