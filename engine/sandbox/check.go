package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Wrap is the source a worker compiles for a function body: the body
// starts on the second line, so a position in it is one line below the
// same position in the body.
func Wrap(code string) string { return "(function(input) {\n" + code + "\n})" }

// Check checks a function body's syntax before acceptance, as a worker
// compiles it, and returns nil, a *Error of KindThrown locating the first
// syntax error in the body ("SyntaxError: ..."), or why it could not be
// checked (a *Error of another kind). Nesting deeper than MaxNesting is
// refused here, in the runner's process, without a worker; the rest is
// parsed by a worker (a Request with Check set, answered with goja's
// parser: engine/sandbox/syntax), so that the runner itself links no
// JavaScript parser. The check takes a worker as an evaluation does
// (an idle one when there is one, else it starts one, which the next
// evaluation finds warm), waiting for a free one if all are busy, and
// kills it if it has not answered within CheckTimeout. Bodies found valid
// are remembered (up to checkedBytes of them), so that a workflow sent
// again is not sent to a worker again.
func (p *Pool) Check(code string) error {
	if err := CheckNesting(code); err != nil {
		return err
	}
	p.mu.Lock()
	_, ok := p.checked[code]
	p.mu.Unlock()
	if ok {
		return nil
	}
	_, err := p.run(context.Background(), Request{Code: code, Check: true}, CheckTimeout)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: KindCrashed, Message: fmt.Sprintf("the syntax check did not end within %v", CheckTimeout)}
	case err != nil:
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checkedSize+len(code) > checkedBytes {
		p.checked, p.checkedSize = nil, 0
	}
	if p.checked == nil {
		p.checked = map[string]struct{}{}
	}
	p.checked[code] = struct{}{}
	p.checkedSize += len(code)
	return nil
}

// checkedBytes bounds the bodies a Pool remembers as valid; past it, it
// forgets them all and starts again.
const checkedBytes = 1 << 20

// CheckTimeout bounds a syntax check in a worker, once it has one: a body
// of maxCodeBytes that passes CheckNesting parses in well under a second.
const CheckTimeout = 5 * time.Second

// CheckNesting refuses a body whose brackets nest deeper than MaxNesting,
// locating the first one, and returns nil otherwise. The parser recurses
// per bracket and backtracks over parentheses (64 KiB of "(" took 3.4 s
// and 256 MB of stack), so nesting is bounded before anything parses.
func CheckNesting(code string) *Error {
	if line, col := tooDeep(code); line > 0 {
		return &Error{Kind: KindThrown, Message: fmt.Sprintf("SyntaxError: brackets nest deeper than %d", MaxNesting), Line: line, Column: col}
	}
	return nil
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
