// Package httpfield checks HTTP header field names and values by the rules
// of golang.org/x/net/http/httpguts (ValidHeaderFieldName and
// ValidHeaderFieldValue), which the bootstrap does not link: importing
// httpguts links golang.org/x/net/idna and, through its package init,
// x/text's bidi and norm tables (about 36 kB of the bootstrap, besides the
// copies net/http vendors), for two loops over bytes.
package httpfield

// ValidName reports whether v is a header field name: one or more
// token characters (RFC 7230, section 3.2.6).
func ValidName(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isToken(v[i]) {
			return false
		}
	}
	return true
}

// ValidValue reports whether v may be a header field's value: no control
// byte (0-31, 127) but a tab.
func ValidValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' || b == 0x7f) && b != '\t' {
			return false
		}
	}
	return true
}

// isToken reports whether b is a tchar: a letter, a digit or one of
// !#$%&'*+-.^_`|~.
func isToken(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
