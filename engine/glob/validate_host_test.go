package glob

import "testing"

// Round 21: a host pattern with an empty label can match no host, so it
// is refused rather than left to do nothing in an allow or deny list.
func TestValidateHost(t *testing.T) {
	for _, p := range []string{".", "..", "a..b", ".example.com", "*..example.com", "example..com.", ""} {
		if ValidateHost(p) == nil {
			t.Errorf("ValidateHost(%q) = nil, want an error", p)
		}
	}
	for _, p := range []string{"*", "example.com", "example.com.", "*.example.com", "a.*.b", "localhost", "10.0.0.1"} {
		if err := ValidateHost(p); err != nil {
			t.Errorf("ValidateHost(%q) = %v", p, err)
		}
	}
}
