package document

import (
	"math"
	"testing"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer is the JSON Schema validator's (santhosh-tekuri/jsonschema,
// whose messages the check words as it does): x/text's English printer,
// which schemaSprintf imitates so that x/text stays a test-only import.
var printer = message.NewPrinter(language.English)

// TestSchemaSprintf holds schemaSprintf to x/text's English printer (the
// validator's) on the verbs and argument types the
// check passes: grouped integers, floats in both notations, signs,
// fractions, the extremes of float64 and int, infinities and -0.
func TestSchemaSprintf(t *testing.T) {
	ints := []int{0, 1, -1, 7, 12, 99, 100, 999, 1000, -1000, 1001, 9999, 12345, -12345,
		100000, 999999, 1000000, 1234567, -1234567, 1 << 31, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 1.5, 10, 100, 999, 1000, -1000,
		12345.6789, -12345.6789, 123456, 123456.789, 999999, 999999.5, 999999.9999999999, 1e6, -1e6,
		1234567, -1234567.5, 1e15 + 0.25, 1e21, 1e22 / 3, 123456789012345678, 1.5e300,
		math.MaxFloat64, -math.MaxFloat64, 0.1, 0.30000000000000004, 2.0 / 3, 0.001, 1e-4, -1e-4,
		0.000123, 0.00012345678901234567, 1e-5, -1e-5, 1.23e-7, 6.666666666666667e-05, 2.5e-300,
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 1e-100, 1e100, 1e-10, 1e10,
		math.Inf(1), math.Inf(-1), math.NaN()}
	for _, n := range ints {
		for _, c := range []struct {
			format string
			args   []any
		}{{"%d", []any{n}}, {"%v", []any{n}}, {"minItems: got %d, want %d", []any{n, -n}}} {
			if got, want := schemaSprintf(c.format, c.args...), printer.Sprintf(c.format, c.args...); got != want {
				t.Errorf("schemaSprintf(%q, %v) = %q, printer: %q", c.format, c.args, got, want)
			}
		}
	}
	for _, f := range floats {
		for _, c := range []struct {
			format string
			args   []any
		}{{"%v", []any{f}}, {"minimum: got %v, want %v", []any{f, -f}}} {
			if got, want := schemaSprintf(c.format, c.args...), printer.Sprintf(c.format, c.args...); got != want {
				t.Errorf("schemaSprintf(%q, %v) = %q, printer: %q", c.format, c.args, got, want)
			}
		}
	}
	// As the check reaches them: decFloat of a number's text, out of
	// float64's range and more precise than it included.
	for _, texts := range []string{"1", "-0", "0.0", "1e400", "-1e400", "1E-400", "123456789", "1234567.0",
		"0.000001", "-99999.99999", "12345678901234567890", "3.141592653589793238462643383279"} {
		f := decFloat(texts)
		if got, want := schemaSprintf("%v", f), printer.Sprintf("%v", f); got != want {
			t.Errorf("schemaSprintf(%%v, decFloat(%s)) = %q, printer: %q", texts, got, want)
		}
	}
	for _, c := range []struct {
		format string
		args   []any
	}{
		{"value must be %s", []any{`"a%b"`}},
		{"%s does not match pattern %s", []any{`"x"`, `"^[a-z]+$"`}},
		{"items at %d and %d are equal", []any{0, 1234}},
		{"got %s, want %s", []any{"number", "string"}},
		{"100%% of %s", []any{"it"}},
		{"no verb", nil},
		{"trailing %", nil},
	} {
		if got, want := schemaSprintf(c.format, c.args...), printer.Sprintf(c.format, c.args...); got != want {
			t.Errorf("schemaSprintf(%q, %v) = %q, printer: %q", c.format, c.args, got, want)
		}
	}
}

// FuzzSchemaSprintf holds schemaSprintf to the printer on any float64 (as
// %v) and int (as %d).
func FuzzSchemaSprintf(f *testing.F) {
	for _, s := range []struct {
		f float64
		n int
	}{{0, 0}, {1e6, 1000}, {-1234567.5, -12345}, {1e-5, math.MaxInt64}, {math.Inf(1), math.MinInt64}, {0.000123, 7}} {
		f.Add(s.f, s.n)
	}
	f.Fuzz(func(t *testing.T, x float64, n int) {
		format := "got %v, want %d"
		if got, want := schemaSprintf(format, x, n), printer.Sprintf(format, x, n); got != want {
			t.Errorf("schemaSprintf(%q, %v, %d) = %q, printer: %q", format, x, n, got, want)
		}
	})
}
