package sandbox

import (
	"errors"

	"github.com/dop251/goja/parser"
)

// Wrap is the source a worker compiles for a function body: the body
// starts on the second line, so a position in it is one line below the
// same position in the body.
func Wrap(code string) string { return "(function(input) {\n" + code + "\n})" }

// Check parses a function body as a worker would compile it and returns
// its first syntax error, located in the body, or nil. It uses the
// engine's parser only (no runtime), so that a syntax error is refused
// before an execution is accepted, without starting a worker.
func Check(code string) *Error {
	_, err := parser.ParseFile(nil, "code", Wrap(code), 0)
	if err == nil {
		return nil
	}
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		return &Error{Kind: KindThrown, Message: "SyntaxError: " + e.Message, Line: max(e.Position.Line-1, 1), Column: e.Position.Column}
	}
	return &Error{Kind: KindThrown, Message: "SyntaxError: " + err.Error()}
}
