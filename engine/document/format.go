package document

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// schemaSprintf formats a check's message as the JSON Schema validator
// does, which prints through golang.org/x/text/message's English printer:
// integers and the integer part of decimals grouped by thousands (1,000,
// -12,345), floats in their shortest form, with an exponent from 10⁶ on
// and below 10⁻⁴ written 1.5×10⁰⁶ and 2×10⁻⁰⁵, infinities ∞ and -∞, and
// -0 as 0. It knows the verbs the check passes (%s of a string, %d of an
// int, %v of a float64, and %%); any other verb or argument type is
// formatted by fmt. Written here so that the bootstrap does not link
// x/text's message and language packages (their init and 0.4 MB) for
// these few messages; format_test.go holds it to the
// printer.
func schemaSprintf(format string, args ...any) string {
	var b strings.Builder
	b.Grow(len(format) + 16*len(args))
	n := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(format) {
			b.WriteString("%!(NOVERB)")
			break
		}
		i++
		verb := format[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if n >= len(args) {
			fmt.Fprintf(&b, "%%!%c(MISSING)", verb)
			continue
		}
		arg := args[n]
		n++
		switch v := arg.(type) {
		case string:
			if verb == 's' || verb == 'v' {
				b.WriteString(v)
				continue
			}
		case int:
			if verb == 'd' || verb == 'v' {
				b.WriteString(groupedInt(int64(v)))
				continue
			}
		case float64:
			if verb == 'v' || verb == 'g' {
				b.WriteString(groupedFloat(v))
				continue
			}
		}
		fmt.Fprintf(&b, "%"+string(verb), arg)
	}
	return b.String()
}

// groupedInt is n with its digits grouped by thousands.
func groupedInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + groupDigits(s[1:])
	}
	return groupDigits(s)
}

// groupDigits puts a comma between each group of three digits of an
// unsigned integer's digits, from the right.
func groupDigits(s string) string {
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/3)
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(s[:first])
	for i := first; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// superscripts are the digits of an exponent.
var superscripts = [10]string{"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"}

// groupedFloat is f as the English printer's %v prints it: the digits
// and the choice of notation are strconv's shortest %g (an exponent when
// it is below -4 or at least 6), written with grouping or a superscript
// exponent of at least two digits.
func groupedFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "∞"
	case math.IsInf(f, -1):
		return "-∞"
	case f == 0:
		return "0" // and -0
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, exp, sci := strings.Cut(s, "e")
	if !sci {
		whole, frac, dot := strings.Cut(mant, ".")
		if dot {
			return sign + groupDigits(whole) + "." + frac
		}
		return sign + groupDigits(whole)
	}
	var b strings.Builder
	b.WriteString(sign)
	b.WriteString(mant)
	b.WriteString("×10")
	if exp[0] == '-' {
		b.WriteString("⁻")
	}
	exp = strings.TrimLeft(exp, "+-")
	if len(exp) < 2 {
		b.WriteString(superscripts[0])
	}
	for i := 0; i < len(exp); i++ {
		b.WriteString(superscripts[exp[i]-'0'])
	}
	return b.String()
}
