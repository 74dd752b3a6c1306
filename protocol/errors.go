package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
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
// lists the problems found, each with the path of the field at fault: the
// first MaxDetails of them, each path and message cut to MaxDetailPath and
// MaxDetailMessage bytes, and a last detail counting the rest.
type Invalid struct {
	Details []Detail
	// more counts the problems past MaxDetails, not listed.
	more int
	// Syntax is set when the body is not JSON at all.
	Syntax *Syntax
	// tooDeep marks a body refused for its nesting, which is not decoded
	// further.
	tooDeep bool
}

// Bounds of a 400's details. Paths repeat the keys above each problem, and
// messages may quote what the request holds: one 2 MB key over 300 invalid
// expressions made a 602 MB body from a 2 MB request. Bounded, a 400 is at
// most about 5 MB whatever the request, and what it lists is enough to
// mend the request a thousand problems at a time.
const (
	MaxDetails       = 1000
	MaxDetailPath    = 1 << 10
	MaxDetailMessage = 4 << 10
)

// Invalidf returns an *Invalid with a single detail.
func Invalidf(path, format string, args ...any) *Invalid {
	e := &Invalid{}
	e.Add(path, format, args...)
	return e
}

// Add records one more problem. Past MaxDetails it is only counted: its
// message is not even formatted.
func (e *Invalid) Add(path, format string, args ...any) {
	if len(e.Details) >= MaxDetails {
		e.more++
		return
	}
	e.Append(Detail{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Append records problems already made, within the same bounds as Add;
// another Invalid's are appended with its uncounted rest.
func (e *Invalid) Append(ds ...Detail) {
	for _, d := range ds {
		if len(e.Details) >= MaxDetails {
			e.more++
			continue
		}
		e.Details = append(e.Details, Detail{Path: CutPath(d.Path), Message: cutMessage(d.Message)})
	}
}

// Merge appends o's problems, those it only counted included.
func (e *Invalid) Merge(o *Invalid) {
	e.Append(o.Details...)
	e.more += o.more
}

// More returns how many problems were found past MaxDetails.
func (e *Invalid) More() int { return e.more }

// CutPath returns p within MaxDetailPath bytes: its start and its end,
// which say where the problem is, around an ellipsis.
func CutPath(p string) string {
	if len(p) <= MaxDetailPath {
		return p
	}
	const tail = MaxDetailPath / 2
	head := MaxDetailPath - tail - len("…")
	for head > 0 && !utf8.RuneStart(p[head]) {
		head--
	}
	from := len(p) - tail
	for from < len(p) && !utf8.RuneStart(p[from]) {
		from++
	}
	return p[:head] + "…" + p[from:]
}

// cutMessage returns m within MaxDetailMessage bytes: its start, which
// quotes what is at fault, and its end, which says what is wrong with it
// (and what may have been meant), around a mark of what was cut.
func cutMessage(m string) string {
	if len(m) <= MaxDetailMessage {
		return m
	}
	const keep = MaxDetailMessage/2 - 32
	head := keep
	for head > 0 && !utf8.RuneStart(m[head]) {
		head--
	}
	from := len(m) - keep
	for from < len(m) && !utf8.RuneStart(m[from]) {
		from++
	}
	return m[:head] + "…[" + strconv.Itoa(from-head) + " bytes cut]…" + m[from:]
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
	fmt.Fprintf(&b, " (and %d more)", len(e.Details)-1+e.more)
	return b.String()
}

// Response returns the error body to send.
func (e *Invalid) Response() ErrorResponse {
	details := e.Details
	if e.more > 0 {
		details = append(details[:len(details):len(details)], Detail{Message: fmt.Sprintf(
			"and %d more problems, not listed: a 400 lists the first %d", e.more, MaxDetails)})
	}
	return ErrorResponse{Version: Version, Error: ErrorBody{
		Code:    CodeInvalidExecution,
		Message: e.Error(),
		Details: details,
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
