package httpfield

import (
	"testing"

	"golang.org/x/net/http/httpguts"
)

// TestSameAsHTTPGuts: every byte, alone and among token characters, is
// judged as httpguts judges it, names and values alike.
func TestSameAsHTTPGuts(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		for _, v := range []string{string([]byte{b}), "X-" + string([]byte{b}) + "-a", string([]byte{b, b})} {
			if got, want := ValidName(v), httpguts.ValidHeaderFieldName(v); got != want {
				t.Errorf("ValidName(%q) = %v, httpguts says %v", v, got, want)
			}
			if got, want := ValidValue(v), httpguts.ValidHeaderFieldValue(v); got != want {
				t.Errorf("ValidValue(%q) = %v, httpguts says %v", v, got, want)
			}
		}
	}
	for _, v := range []string{"", "Content-Type", "a b", "é", "x\x00", "tab\there", " lead", "trail "} {
		if ValidName(v) != httpguts.ValidHeaderFieldName(v) || ValidValue(v) != httpguts.ValidHeaderFieldValue(v) {
			t.Errorf("%q judged unlike httpguts", v)
		}
	}
}
