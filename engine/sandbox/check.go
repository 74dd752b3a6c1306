package sandbox

import (
	"errors"
	"strings"
	"unicode/utf8"

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
		return SyntaxError(code, e.Message, e.Position.Line, e.Position.Column)
	}
	return &Error{Kind: KindThrown, Message: "SyntaxError: " + err.Error()}
}

// SyntaxError locates a syntax error the parser found at line and column
// of Wrap(code) in the body itself. One past the body, in what Wrap
// added, is the body ending too early: its end is the place.
func SyntaxError(code, msg string, line, column int) *Error {
	line--
	lines := strings.Count(code, "\n") + 1
	if line > lines {
		last := code[strings.LastIndexByte(code, '\n')+1:]
		line, column, msg = lines, utf8.RuneCountInString(last)+1, "Unexpected end of input"
	}
	return &Error{Kind: KindThrown, Message: "SyntaxError: " + msg, Line: max(line, 1), Column: column}
}
