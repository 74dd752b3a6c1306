package document

import (
	"math"
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

// maxMillis is the largest count of milliseconds a time.Duration holds.
const maxMillis = math.MaxInt64 / 1_000_000
