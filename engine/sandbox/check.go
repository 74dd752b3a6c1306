package sandbox

import (
	"errors"
	"fmt"
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
	// The parser recurses per bracket and backtracks over parentheses: 64
	// KiB of "(" took 3.4 s and 256 MB of stack in the runner's process.
	// Nesting is bounded before it parses.
	if line, col := tooDeep(code); line > 0 {
		return &Error{Kind: KindThrown, Message: fmt.Sprintf("SyntaxError: brackets nest deeper than %d", MaxNesting), Line: line, Column: col}
	}
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

// MaxNesting bounds how deep brackets ((, [, {, ${) nest in a body.
const MaxNesting = 256

// tooDeep returns the position of the first bracket nested deeper than
// MaxNesting, or 0, 0. It skips string literals, template text and
// comments, so that brackets there do not count; a regular expression
// literal's brackets do (a bound over-counted, never under-counted).
func tooDeep(code string) (line, col int) {
	depth, ln, lineStart := 0, 1, 0
	// templates holds the depth at which each open template's ${ began.
	var templates []int
	inTemplate := func() bool { return len(templates) > 0 && templates[len(templates)-1] == depth }
	i := 0
	open := func() bool {
		depth++
		return depth > MaxNesting
	}
	for i < len(code) {
		c := code[i]
		switch {
		case c == '\n':
			ln, lineStart = ln+1, i+1
		case inTemplate() && c == '`':
			templates = templates[:len(templates)-1]
		case inTemplate() && c == '$' && i+1 < len(code) && code[i+1] == '{':
			i++
			if open() {
				return ln, i - lineStart
			}
		case inTemplate() && c == '\\':
			i++
		case inTemplate():
		case c == '`':
			templates = append(templates, depth)
		case c == '\'' || c == '"':
			for i++; i < len(code) && code[i] != c && code[i] != '\n'; i++ {
				if code[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(code) && code[i+1] == '/':
			for i < len(code) && code[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(code) && code[i+1] == '*':
			end := strings.Index(code[i+2:], "*/")
			if end < 0 {
				return 0, 0 // the parser reports it
			}
			ln += strings.Count(code[i:i+2+end], "\n")
			if nl := strings.LastIndexByte(code[:i+2+end], '\n'); nl >= 0 {
				lineStart = nl + 1
			}
			i += end + 4
			continue
		case c == '(' || c == '[' || c == '{':
			if open() {
				return ln, i - lineStart + 1
			}
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
		i++
	}
	return 0, 0
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
