package models

import (
	"errors"

	"github.com/runnerd/lambda-runner/protocol"
)

// fieldErrors returns every *protocol.Detail in err, which may be one or a
// join of several (as [NewTable] returns), in order.
func fieldErrors(err error) []*protocol.Detail {
	var out []*protocol.Detail
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*protocol.Detail); ok {
			out = append(out, fe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		walk(errors.Unwrap(err))
	}
	walk(err)
	return out
}
