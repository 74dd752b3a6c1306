package egress

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// Response is what the http node outputs. Non-2xx statuses are returned
// like any other; the node decides what failOnStatus means.
type Response struct {
	Status int
	// Headers has canonical names; repeated headers are joined with ", ".
	Headers map[string]string
	// Body is decoded JSON (map[string]any, []any, string, float64, bool or
	// nil) or a string, per Request.ResponseType.
	Body any
}

func flattenHeader(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vv := range h {
		out[http.CanonicalHeaderKey(k)] = strings.Join(vv, ", ")
	}
	return out
}

// isJSONType reports whether a Content-Type announces JSON:
// application/json, text/json or any +json type (application/problem+json).
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// decodeBody types a body per responseType. The error message names the
// host, never the content.
func decodeBody(responseType, contentType string, b []byte, host string) (any, error) {
	switch responseType {
	case ResponseText:
		return string(b), nil
	case ResponseJSON:
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, nil
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, failed("response from %s is not valid JSON", host)
		}
		return v, nil
	default: // auto
		if isJSONType(contentType) && len(bytes.TrimSpace(b)) > 0 {
			var v any
			if json.Unmarshal(b, &v) == nil {
				return v, nil
			}
		}
		return string(b), nil
	}
}
