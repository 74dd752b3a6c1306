package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/protocol"
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

// decodeBody types a body per responseType. A JSON body that would decode
// to more than maxDecoded (when positive) is refused undecoded. The error
// message names the host, never the content.
func decodeBody(responseType, contentType string, b []byte, host string, maxDecoded int64) (any, error) {
	switch responseType {
	case ResponseText:
		return string(b), nil
	case ResponseJSON:
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, nil
		}
		if err := checkDecoded(b, host, maxDecoded); err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, failed("response from %s is not valid JSON", host)
		}
		return v, nil
	default: // auto
		if isJSONType(contentType) && len(bytes.TrimSpace(b)) > 0 {
			if err := checkDecoded(b, host, maxDecoded); err != nil {
				return nil, err
			}
			var v any
			if json.Unmarshal(b, &v) == nil {
				return v, nil
			}
		}
		return string(b), nil
	}
}

// checkDecoded refuses a JSON body whose decoded value would weigh more
// than max: its bytes were bounded as they were read, but decoding
// multiplies them (a megabyte of "{}," is 22 MB decoded), and the node's
// output cap would only refuse it once it was all on the heap.
func checkDecoded(b []byte, host string, max int64) error {
	if max <= 0 {
		return nil
	}
	if w := jsonweight.Of(b); w > max {
		return &Error{Code: protocol.CodeOutputTooLarge, Message: fmt.Sprintf(
			"response from %s would decode to about %d bytes, over the node's output cap of %d bytes", host, w, max)}
	}
	return nil
}
