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
// evaluation finds warm), waiting for a free one if all are busy, for at
// most CheckTimeout (Prepare has no context to end the wait: evaluations
// may hold every worker for minutes), and kills it if it has not answered
// within CheckTimeout. Bodies found valid
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
	_, err := p.run(context.Background(), Request{Code: code, Check: true}, CheckTimeout, CheckTimeout)
	switch {
	case errors.Is(err, errNoSlot):
		return &Error{Kind: KindCrashed, Message: fmt.Sprintf("no sandbox worker came free for the syntax check within %v: all are busy evaluating", CheckTimeout)}
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

// CheckTimeout bounds a syntax check's wait for a worker, and the check in
// the worker once it has one: a body of maxCodeBytes that passes
// CheckNesting parses in well under a second.
const CheckTimeout = 5 * time.Second

// CheckNesting refuses a body whose brackets and arrow functions nest
// deeper than MaxNesting, locating the first one too deep, and returns nil
// otherwise. The parser recurses per level and backtracks over
// parentheses (64 KiB of "(" took 3.4 s and 256 MB of stack) and spends
// time quadratic in the nesting of arrow functions, whose concise bodies
// nest without a bracket (20,000 of "a=>" took 3.8 s), so nesting is
// bounded before anything parses.
func CheckNesting(code string) *Error {
	if line, col, arrow := tooDeep(code); line > 0 {
		what := "brackets"
		if arrow {
			what = "arrow functions, labels and brackets"
		}
		return &Error{Kind: KindThrown, Message: fmt.Sprintf("SyntaxError: %s nest deeper than %d", what, MaxNesting), Line: line, Column: col}
	}
	return nil
}

// MaxNesting bounds how deep brackets ((, [, {, ${) and arrow functions
// nest in a body.
const MaxNesting = 256

// tooDeep returns the position of the first bracket or arrow (=>) nested
// deeper than MaxNesting, and whether it is an arrow, or 0, 0. It skips
// string literals, template text and comments, so that brackets there do
// not count. It does not tell a regular expression literal from a
// division, so what is in one counts as code: /(/ over-counts, and /)/ or
// /;/ can hide nesting from it. It is a filter of the plain attacks, ahead
// of the parse; what bounds every parse is the worker's (its stack and
// memory limits, CheckTimeout). An arrow opens a level that
// lasts, at its bracket depth, until what ends a concise body for sure:
// the bracket around it closing, a comma or semicolon, or a keyword that
// only starts a statement (const, var, return, if, for, while, ...). A
// newline does not end it ("a =>\n b" is one function).
func tooDeep(code string) (line, col int, arrow bool) {
	depth, ln, lineStart := 0, 1, 0
	// templates holds the depth at which each open template's ${ began.
	var templates []int
	inTemplate := func() bool { return len(templates) > 0 && templates[len(templates)-1] == depth }
	// arrows[d] counts the arrows open at bracket depth d; open is the
	// sum, the nesting being depth + open.
	arrows := []int{0}
	open := 0
	push := func() bool {
		depth++
		arrows = append(arrows, 0)
		return depth+open > MaxNesting
	}
	release := func() {
		open -= arrows[depth]
		arrows[depth] = 0
	}
	i := 0
	for i < len(code) {
		c := code[i]
		switch {
		case c == '\n':
			ln, lineStart = ln+1, i+1
		case inTemplate() && c == '`':
			templates = templates[:len(templates)-1]
		case inTemplate() && c == '$' && i+1 < len(code) && code[i+1] == '{':
			i++
			if push() {
				return ln, i - lineStart, open > 0
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
				return 0, 0, false // the parser reports it
			}
			ln += strings.Count(code[i:i+2+end], "\n")
			if nl := strings.LastIndexByte(code[:i+2+end], '\n'); nl >= 0 {
				lineStart = nl + 1
			}
			i += end + 4
			continue
		case c == '(' || c == '[' || c == '{':
			if push() {
				return ln, i - lineStart + 1, open > 0
			}
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				release()
				arrows = arrows[:depth]
				depth--
			}
		case c == '=' && i+1 < len(code) && code[i+1] == '>':
			i++
			arrows[depth]++
			open++
			if depth+open > MaxNesting {
				return ln, i - lineStart, true
			}
		case c == ',' || c == ';':
			release()
		case isIdentByte(c):
			j := i
			for j < len(code) && isIdentByte(code[j]) {
				j++
			}
			// A keyword that starts only a statement, not a property
			// name (x.if) nor part of another name.
			if statementKeywords[code[i:j]] && (i == 0 || code[i-1] != '.') {
				release()
			}
			if isLabel(code, i, j) {
				// A labelled statement nests the statement after it, and
				// the parser spends time and memory quadratic in a run of
				// them ("a:" 16,000 times, a 32 KB body, took 76 s and
				// 14 GB): a label opens a level that ends as an arrow's
				// does. A member of an object literal ({a: 1, b: 2}) opens
				// one too, which the comma or the brace ends.
				arrows[depth]++
				open++
				if depth+open > MaxNesting {
					return ln, i - lineStart + 1, true
				}
			}
			i = j
			continue
		}
		i++
	}
	return 0, 0, false
}

// isLabel reports whether the name code[i:j] is followed by a colon, as a
// label (or an object literal's member) is, and not preceded by what
// makes it the middle of a conditional (a ? b : c), a property (x.y) or a
// case (case a:).
func isLabel(code string, i, j int) bool {
	k := j
	for k < len(code) && (code[k] == ' ' || code[k] == '\t') {
		k++
	}
	if k >= len(code) || code[k] != ':' {
		return false
	}
	p := i - 1
	for p >= 0 && (code[p] == ' ' || code[p] == '\t' || code[p] == '\n' || code[p] == '\r') {
		p--
	}
	return p < 0 || code[p] != '?' && code[p] != '.' && !isIdentByte(code[p])
}

// statementKeywords are reserved words that can only start a statement,
// never appear inside an expression: one ends any concise arrow body open
// at its bracket depth (or the body is a syntax error). "let", "async"
// and "yield" are names in some contexts and are not among them.
var statementKeywords = map[string]bool{
	"break": true, "const": true, "continue": true, "debugger": true, "do": true, "for": true,
	"if": true, "return": true, "switch": true, "throw": true, "try": true, "var": true, "while": true,
}

// isIdentByte reports whether c can be part of a name (ASCII; a byte of
// a multi-byte character counts, which only keeps names together).
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
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
