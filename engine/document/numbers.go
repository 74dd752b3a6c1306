package document

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// decimal is a JSON number held exactly as sign, significant digits and a
// power of ten, so that the document checks compare numbers as the JSON
// Schema validator does (exactly, as rationals) without big.Rat: a number
// like 1e999999999 costs its text, not its value.
type decimal struct {
	neg    bool
	digits string // no leading or trailing zeros; "" is zero
	exp    int    // value = digits × 10^exp
	// huge says the exponent as written is beyond what math/big parses
	// (|e| > 1e6): the validator then finds the number neither an
	// integer nor equal to any value, and so do these checks.
	huge bool
}

// maxDecimalExp bounds exponents; a document cannot hold enough digits to
// make a larger one matter.
const maxDecimalExp = 1 << 40

func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return decimal{}, false
	}
	exp := 0
	if hasExp {
		neg := false
		switch {
		case strings.HasPrefix(expText, "+"):
			expText = expText[1:]
		case strings.HasPrefix(expText, "-"):
			neg, expText = true, expText[1:]
		}
		if expText == "" || !allDigits(expText) {
			return decimal{}, false
		}
		for _, c := range expText {
			if exp < maxDecimalExp {
				exp = exp*10 + int(c-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	digits := intPart + frac
	exp -= len(frac)
	d.huge = exp > 1e6 || exp < -1e6
	digits = strings.TrimLeft(digits, "0")
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return decimal{huge: d.huge}, true
	}
	d.digits, d.exp = digits, exp
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cmp compares d and o: -1, 0 or +1.
func (d decimal) cmp(o decimal) int {
	switch {
	case d.digits == "" && o.digits == "":
		return 0
	case d.digits == "":
		if o.neg {
			return 1
		}
		return -1
	case o.digits == "":
		if d.neg {
			return -1
		}
		return 1
	case d.neg != o.neg:
		if d.neg {
			return -1
		}
		return 1
	}
	c := d.cmpAbs(o)
	if d.neg {
		return -c
	}
	return c
}

func (d decimal) cmpAbs(o decimal) int {
	// Magnitudes: the position of the leading digit.
	dm, om := len(d.digits)+d.exp, len(o.digits)+o.exp
	if dm != om {
		if dm < om {
			return -1
		}
		return 1
	}
	return strings.Compare(d.digits, o.digits)
}

func (d decimal) isInt() bool { return !d.huge && (d.digits == "" || d.exp >= 0) }

// jsonNumber reports v's exact value when it is a JSON number.
func jsonNumber(v any) (decimal, string, bool) {
	switch n := v.(type) {
	case json.Number:
		d, ok := parseDecimal(string(n))
		return d, string(n), ok
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return decimal{}, "", false
		}
		s := strconv.FormatFloat(n, 'g', -1, 64)
		d, ok := parseDecimal(s)
		return d, s, ok
	}
	return decimal{}, "", false
}

// maxMillis is the largest count of milliseconds a time.Duration holds.
const maxMillis = math.MaxInt64 / 1_000_000

// millis converts an integer JSON number to an int64 count of milliseconds,
// clamped to what a time.Duration holds. ok is false when v is not an
// integer.
func millis(v any) (int64, bool) {
	d, _, ok := jsonNumber(v)
	if !ok || !d.isInt() {
		return 0, false
	}
	if d.digits == "" {
		return 0, true
	}
	if len(d.digits)+d.exp > 19 {
		if d.neg {
			return -maxMillis, true
		}
		return maxMillis, true
	}
	n, err := strconv.ParseInt(d.digits+strings.Repeat("0", d.exp), 10, 64)
	if err != nil || n > maxMillis {
		n = maxMillis
	}
	if d.neg {
		n = -n
	}
	return n, true
}
