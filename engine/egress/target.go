package egress

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// parseTarget parses a request URL and checks it with checkTarget. Parse
// errors are reported without the URL: its query may hold a secret.
func parseTarget(raw string) (*url.URL, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", failed("invalid URL")
	}
	host, err := checkTarget(u)
	if err != nil {
		return nil, "", err
	}
	return u, host, nil
}

// checkTarget checks the URL of one hop and returns its host as the
// policy, the bound secrets and the permission gate see it: lower-case,
// without port, brackets or trailing dot.
func checkTarget(u *url.URL) (string, error) {
	switch {
	case u.Scheme == "":
		return "", failed("URL must be absolute, with scheme http or https")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", blocked("URL scheme %q is not allowed: only http and https", u.Scheme)
	case u.User != nil:
		// Credentials belong in headers, where Go strips them on
		// cross-host redirects and where secrets are expected.
		return "", blocked("URL userinfo is not allowed: send credentials in a header")
	case u.Opaque != "":
		return "", failed("invalid URL: %s: must have //host", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", failed("invalid URL: bad port")
		}
	}
	h := u.Hostname()
	if h == "" {
		return "", failed("invalid URL: no host")
	}
	if strings.Contains(h, ":") || strings.Contains(h, "%") {
		// Only an IPv6 literal has a colon here.
		ip, err := netip.ParseAddr(h)
		if err != nil {
			return "", failed("invalid URL: bad IPv6 address")
		}
		if ip.Zone() != "" {
			return "", failed("invalid URL: IPv6 zones are not supported")
		}
		return ip.String(), nil
	}
	host := strings.TrimSuffix(strings.ToLower(h), ".")
	if host == "" || !validHostName(host) {
		// Non-ASCII names would reach the dialler in punycode while the
		// policy saw Unicode, so only one spelling is accepted.
		return "", failed("invalid URL: host must be ASCII letters, digits, '-', '_' and '.' (write internationalized names as xn--)")
	}
	return host, nil
}

func validHostName(h string) bool {
	for _, label := range strings.Split(h, ".") {
		if label == "" {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// describe renders u for messages: scheme, host and path only; no query,
// fragment or userinfo, which may carry secrets.
func describe(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// appendQuery adds q to u's query. The existing query is left exactly as
// written (it may be part of a signed URL); new parameters are appended in
// key order.
func appendQuery(u *url.URL, q map[string]any) error {
	if len(q) == 0 {
		return nil
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		vals, err := queryValues(q[k])
		if err != nil {
			// Name the parameter, never its value.
			return failed("query parameter %q: %v", k, err)
		}
		for _, v := range vals {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(v))
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if u.RawQuery == "" {
		u.RawQuery = b.String()
	} else {
		u.RawQuery += "&" + b.String()
	}
	u.ForceQuery = false
	return nil
}

// queryValues renders one query value: a scalar is one value, an array
// repeats the key, null omits it.
func queryValues(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok, err := queryScalar(v); ok || err != nil {
		return []string{s}, err
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("unsupported value of type %s (want string, number, bool or an array of those)", kindName(v))
	}
	out := make([]string, 0, rv.Len())
	for i := range rv.Len() {
		e := rv.Index(i).Interface()
		if e == nil {
			continue
		}
		s, ok, err := queryScalar(e)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("array element %d: unsupported value of type %s", i, kindName(e))
		}
		out = append(out, s)
	}
	return out, nil
}

// queryScalar renders strings, booleans and numbers; ok is false for
// anything else. Numbers use the shortest exact decimal, so 3.0 is "3".
func queryScalar(v any) (s string, ok bool, err error) {
	switch x := v.(type) {
	case string:
		return x, true, nil
	case bool:
		return strconv.FormatBool(x), true, nil
	case json.Number:
		return x.String(), true, nil
	case float64:
		return formatFloat(x, 64)
	case float32:
		return formatFloat(float64(x), 32)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), true, nil
	}
	return "", false, nil
}

func formatFloat(f float64, bits int) (string, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", true, fmt.Errorf("number is not finite")
	}
	return strconv.FormatFloat(f, 'f', -1, bits), true, nil
}

// kindName names a value's type the way a workflow author thinks of it.
func kindName(v any) string {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
