package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Wrap is the source a worker compiles for a function body: the body
// starts on the second line, so a position in it is one line below the
// same position in the body.
func Wrap(code string) string { return "(function(input) {\n" + code + "\n})" }

// Check checks a function body's syntax before acceptance, as a worker
// compiles it, and returns nil, a *Error of KindThrown locating the first
// syntax error in the body ("SyntaxError: ..."), an error wrapping
// ErrBusy when ctx ended before the check did, or why it could not be
// checked (a *Error of another kind). Nesting deeper than MaxNesting is
// refused here, in the runner's process, without a worker; the rest is
// parsed by a worker (a Request with Check set, answered with goja's
// parser: engine/sandbox/syntax), so that the runner itself links no
// JavaScript parser. A check never waits behind evaluations: it takes the
// slot the pool reserves for checks, or an evaluation's when one is free
// (an idle worker when there is one, else it starts one, which the next
// evaluation finds warm). ctx bounds the wait and the check, the caller's
// budget for all the checks of a request; CheckTimeout bounds one check
// in its worker, which is killed if it has not answered by then. Bodies
// found valid are remembered (up to checkedBytes of them), so that a
// workflow sent again is not sent to a worker again.
func (p *Pool) Check(ctx context.Context, code string) error {
	if err := CheckNesting(code); err != nil {
		return err
	}
	p.mu.Lock()
	_, ok := p.checked[code]
	p.mu.Unlock()
	if ok {
		return nil
	}
	if ctx.Err() != nil {
		// The budget is spent: a free slot would not make the check in
		// time (select picks among the ready cases at random).
		return fmt.Errorf("%w: the budget for syntax checks is spent", ErrBusy)
	}
	p.init()
	select {
	case p.checkSlot <- struct{}{}:
		defer func() { <-p.checkSlot }()
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	case <-ctx.Done():
		return fmt.Errorf("%w: no sandbox worker came free for the syntax check in time", ErrBusy)
	}
	cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	_, err := p.evalIn(cctx, Request{Code: code, Check: true}, nil)
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%w: the syntax check did not end in time", ErrBusy)
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

// ErrBusy is a check that could not be made within its caller's time
// (Check's context): the sandbox was busy, the code is not at fault, and
// the same check may pass later.
var ErrBusy = errors.New("the sandbox is busy")

// checkedBytes bounds the bodies a Pool remembers as valid; past it, it
// forgets them all and starts again.
const checkedBytes = 1 << 20

// CheckTimeout bounds one syntax check in its worker: a body of
// maxCodeBytes that passes CheckNesting parses in well under a second.
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
// string literals, template text, comments and regular expression
// literals, so that brackets there do not count (a "}" in /}/ would
// otherwise close a level the parser never sees closed, and hide the
// nesting around it). Where a "/" starts a regular expression is told as
// the parser tells it, from the token before: after a value (a name, a
// number, a string, "]" or the ")" of a call) it divides; after an
// operator, a keyword such as return, or the ")" of if, for, while or
// with, it starts a literal. After "}", "++", "--" and names that are
// keywords only in places (of, yield, await) it could be either: there
// the literal is read both ways at once, its opening brackets, arrows and
// colons counted and its closing ones not, which counts at least the
// nesting the parser sees, whichever it reads. A string or comment ends
// where the parser's does (a line comment at any line terminator, a
// string not at a backslash-escaped CRLF). It is a filter of the plain
// attacks, ahead of the parse; what bounds every parse is the worker's
// (its stack and memory limits, CheckTimeout) and the request's budget
// for its checks. An arrow opens a level that lasts, at its bracket
// depth, until what ends a concise body for sure: the bracket around it
// closing, a comma or semicolon, or a keyword that only starts a
// statement (const, var, return, if, for, while, ...). A newline does not
// end it ("a =>\n b" is one function).
func tooDeep(code string) (line, col int, arrow bool) {
	depth, ln, lineStart := 0, 1, 0
	// templates holds the depth at which each open template's ${ began.
	var templates []int
	inTemplate := func() bool { return len(templates) > 0 && templates[len(templates)-1] == depth }
	// arrows[d] counts the arrows open at bracket depth d; open is the
	// sum, the nesting being depth + open. control[d] says the bracket
	// that opened depth d is the "(" of if, for, while or with.
	arrows := []int{0}
	control := []bool{false}
	open := 0
	// last is what the previous token says a "/" is; controlWord is set
	// when that token is if, for, while or with.
	last, controlWord := beforeOperand, false
	push := func(ctl bool) bool {
		depth++
		arrows = append(arrows, 0)
		control = append(control, ctl)
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
			last = afterValue
		case inTemplate() && c == '$' && i+1 < len(code) && code[i+1] == '{':
			i++
			if push(false) {
				return ln, i - lineStart, open > 0
			}
			last = beforeOperand
		case inTemplate() && c == '\\':
			i++
		case inTemplate():
		case c == '`':
			templates = append(templates, depth)
		case c == '\'' || c == '"':
			for i++; i < len(code) && code[i] != c && code[i] != '\n'; i++ {
				if code[i] == '\\' {
					i++
					if i+1 < len(code) && code[i] == '\r' && code[i+1] == '\n' {
						i++ // a line continuation, CRLF
					}
				}
			}
			last = afterValue
		case c == '/' && i+1 < len(code) && code[i+1] == '/':
			for i < len(code) && lineTerminator(code, i) == 0 {
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
		case c == '/' && last != afterValue:
			end := regexpEnd(code, i)
			if end < 0 {
				// Not a literal on this line: a division, or a syntax
				// error the parser reports.
				last = beforeOperand
				break
			}
			if last == eitherWay {
				for k := i + 1; k < end; k++ {
					switch code[k] {
					case '(', '[', '{':
						if push(false) {
							return ln, k - lineStart + 1, open > 0
						}
					case ':', '>':
						if code[k] == '>' && code[k-1] != '=' {
							continue
						}
						arrows[depth]++
						open++
						if depth+open > MaxNesting {
							return ln, k - lineStart + 1, true
						}
					}
				}
			} else {
				last = afterValue
			}
			i = end + 1
			continue
		case c == '(' || c == '[' || c == '{':
			ctl := c == '(' && controlWord
			controlWord = false
			if push(ctl) {
				return ln, i - lineStart + 1, open > 0
			}
			last = beforeOperand
		case c == ')' || c == ']' || c == '}':
			last = afterValue
			if depth > 0 {
				switch {
				case c == ')' && control[depth]:
					last = beforeOperand
				case c == '}':
					last = eitherWay
				}
				release()
				arrows = arrows[:depth]
				control = control[:depth]
				depth--
			}
			if inTemplate() {
				last = beforeOperand // back in the template's text
			}
		case c == '=' && i+1 < len(code) && code[i+1] == '>':
			i++
			arrows[depth]++
			open++
			if depth+open > MaxNesting {
				return ln, i - lineStart, true
			}
			last = beforeOperand
		case c == ',' || c == ';':
			release()
			last = beforeOperand
		case (c == '+' || c == '-') && i+1 < len(code) && code[i+1] == c:
			i++
			last = eitherWay
		case c >= utf8.RuneSelf && spaceAt(code, i) > 0:
			// No-break and other spaces: nothing, as ' ' (U+2028 and
			// U+2029 end lines, as far as a "/" after them is concerned).
			i += spaceAt(code, i)
			continue
		case isIdentByte(c):
			j := i
			for j < len(code) && isIdentByte(code[j]) && (code[j] < utf8.RuneSelf || spaceAt(code, j) == 0) {
				j++
			}
			word := code[i:j]
			property := afterDot(code, i)
			// A keyword that starts only a statement, not a property
			// name (x.if) nor part of another name.
			if statementKeywords[word] && !property {
				release()
			}
			last, controlWord = afterValue, false
			if !property {
				last, controlWord = wordKind(word), controlWords[word]
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
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
		default:
			// An operator or other punctuation: what follows is an
			// operand. A byte of a multi-byte character is a name's
			// (isIdentByte), or a space, which changes nothing.
			last = beforeOperand
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			controlWord = false // only spaces between if and its (
		}
		i++
	}
	return 0, 0, false
}

// What the token before a "/" says it is (tooDeep).
const (
	beforeOperand = iota // an operator, a keyword such as return: a literal
	afterValue           // a name, a number, a string, "]": a division
	eitherWay            // "}", "++", of, yield, await: either
)

// wordKind says what a name or keyword makes a "/" after it.
func wordKind(word string) int {
	switch word {
	case "return", "typeof", "instanceof", "in", "new", "delete", "void", "throw", "case", "do", "else":
		return beforeOperand
	case "of", "yield", "await":
		return eitherWay // names too, in places
	}
	return afterValue
}

// afterDot reports whether the name at code[i] follows a dot: a property
// name (x.if, x?.return), whatever it is spelled like.
func afterDot(code string, i int) bool {
	p := i - 1
	for p >= 0 && (code[p] == ' ' || code[p] == '\t' || code[p] == '\n' || code[p] == '\r') {
		p--
	}
	return p >= 0 && code[p] == '.'
}

// regexpEnd returns the index of the "/" that ends the regular expression
// literal starting at code[i], or -1 when none does on its line.
func regexpEnd(code string, i int) int {
	class := false
	for j := i + 1; j < len(code); j++ {
		if lineTerminator(code, j) > 0 {
			return -1
		}
		switch c := code[j]; {
		case c == '\\':
			j++
		case class:
			class = c != ']'
		case c == '[':
			class = true
		case c == '/':
			return j
		}
	}
	return -1
}

// spaceAt returns the length of the white space or line terminator
// beyond ASCII at code[i] (U+00A0, U+FEFF, U+2028, the category Zs), 0
// when there is none.
func spaceAt(code string, i int) int {
	r, n := utf8.DecodeRuneInString(code[i:])
	if r == 0xFEFF || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Zs, r) {
		return n
	}
	return 0
}

// lineTerminator returns the length of the line terminator at code[i]
// (LF, CR, U+2028, U+2029), 0 when there is none.
func lineTerminator(code string, i int) int {
	switch {
	case code[i] == '\n' || code[i] == '\r':
		return 1
	case strings.HasPrefix(code[i:], "\u2028") || strings.HasPrefix(code[i:], "\u2029"):
		return 3
	}
	return 0
}

// controlWords are the keywords whose parenthesis is followed by a
// statement, which may start with a regular expression literal.
var controlWords = map[string]bool{"if": true, "for": true, "while": true, "with": true}

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
