package lang

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"
)

// MaxNesting bounds how deeply an expression's text may nest: brackets,
// prefix operators in a row, and the chains that expr-lang's parser
// descends into one call at a time (?:, if/else, let, ** and ^).
//
// The parser recurses once per level on the goroutine's stack before its
// node limit can count anything (parentheses make no node of their own): a
// million of them in a 2 MB request overflowed the 1 GB stack, and a Go
// stack overflow is fatal, not a panic, so it ended the whole process.
// A document's own nesting is bounded at 128 (RUNNER_MAX_DEPTH's default);
// an expression's is held to the same.
const MaxNesting = 128

// nestLevel is one open bracket of the scan in checkNesting.
type nestLevel struct {
	prefix int  // prefix operators waiting for their operand
	chain  int  // ?:, if, let, ** and ^ met at this level since its last comma
	open   byte // the bracket that opened it, 0 at the top
}

// checkNesting refuses a text whose parse would recurse deeper than
// MaxNesting levels. It over-estimates rather than mirrors the parser (a
// chain counts until its bracket closes, or a comma ends the argument), so
// it is never below the parser's depth; no expression a person writes
// comes near it. It reads the text once, with expr-lang's own lexer, so
// strings and comments are skipped as the parser skips them. A text the
// lexer refuses is left to the parser, whose message names the fault.
func checkNesting(src string) error {
	l := lexer.New()
	l.Reset(file.NewSource(src))
	stack := make([]nestLevel, 1, 8)
	depth := 0 // the estimate of the parser's recursion here
	operand := true
	for {
		t, err := l.Next()
		if err != nil || t.Kind == lexer.EOF {
			return nil
		}
		top := &stack[len(stack)-1]
		switch t.Kind {
		case lexer.Bracket:
			switch t.Value {
			case "(", "[", "{":
				// A call's or an index's bracket recurses as a group's does.
				stack = append(stack, nestLevel{open: t.Value[0]})
				depth++
				operand = true
			default:
				if len(stack) == 1 {
					return nil // unbalanced: the parser says where
				}
				depth -= 1 + top.prefix + top.chain
				stack = stack[:len(stack)-1]
				// The group was the operand of the prefix operators before it.
				out := &stack[len(stack)-1]
				depth -= out.prefix
				out.prefix = 0
				operand = false
			}
		case lexer.Operator:
			switch v := t.Value; {
			case strings.HasPrefix(v, "#"):
				// #, #index, #acc: operands.
				depth -= top.prefix
				top.prefix = 0
				operand = false
				continue
			case v == "." || v == "?.":
				// Member access: the name follows, no recursion.
				continue
			case v == ",":
				depth -= top.chain + top.prefix
				top.chain, top.prefix = 0, 0
			case v == "?" || v == "if" || v == "let" || v == "**" || v == "^" && !operand:
				top.chain++
				depth++
			case operand:
				top.prefix++
				depth++
			}
			operand = true
		default: // identifiers, numbers, strings, bytes
			depth -= top.prefix
			top.prefix = 0
			operand = false
		}
		if depth > MaxNesting {
			return fmt.Errorf("expression nested more than %d levels deep at character %d (brackets, prefix operators, ?:, if, let, ** and ^ each nest one): split it, or build the value in steps", MaxNesting, t.From+1)
		}
	}
}
