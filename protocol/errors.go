package protocol

import (
	"fmt"
	"strings"
)

// ErrorResponse is the JSON body of every non-2xx response.
type ErrorResponse struct {
	Version int       `json:"version"`
	Error   ErrorBody `json:"error"`
}

// ErrorBody describes what went wrong; Details point at the offending
// fields of the request.
type ErrorBody struct {
	Code    Code     `json:"code"`
	Message string   `json:"message"`
	Details []Detail `json:"details,omitempty"`
}

// Detail is one problem at one place in the request, with a path such as
// "workflow.nodes[2].needs[0]".
type Detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Invalid is a request rejected before acceptance (400 INVALID_EXECUTION). It
// lists every problem found, each with the path of the field at fault.
type Invalid struct {
	Details []Detail
	// Syntax is set when the body is not JSON at all.
	Syntax *Syntax
	// tooDeep marks a body refused for its nesting, which is not decoded
	// further.
	tooDeep bool
}

// Invalidf returns an *Invalid with a single detail.
func Invalidf(path, format string, args ...any) *Invalid {
	return &Invalid{Details: []Detail{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// Add records one more problem.
func (e *Invalid) Add(path, format string, args ...any) {
	e.Details = append(e.Details, Detail{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Err returns e, or nil when it holds no problem, so that callers can
// collect problems and return e.Err().
func (e *Invalid) Err() error {
	if e == nil || len(e.Details) == 0 {
		return nil
	}
	return e
}

func (e *Invalid) Error() string {
	switch len(e.Details) {
	case 0:
		return "invalid execution"
	case 1:
		return e.Details[0].String()
	}
	var b strings.Builder
	b.WriteString(e.Details[0].String())
	fmt.Fprintf(&b, " (and %d more)", len(e.Details)-1)
	return b.String()
}

// Response returns the error body to send.
func (e *Invalid) Response() ErrorResponse {
	return ErrorResponse{Version: Version, Error: ErrorBody{
		Code:    CodeInvalidExecution,
		Message: e.Error(),
		Details: e.Details,
	}}
}

// Error makes a *Detail an error, so that validators outside this package
// (permissions, models, toolsets, HTTP policy) report problems in the one
// shape the 400 body carries.
func (d *Detail) Error() string { return d.String() }

func (d Detail) String() string {
	if d.Path == "" {
		return d.Message
	}
	return d.Path + ": " + d.Message
}

// NewErrorResponse returns an error body without details.
func NewErrorResponse(code Code, message string) ErrorResponse {
	return ErrorResponse{Version: Version, Error: ErrorBody{Code: code, Message: message}}
}
