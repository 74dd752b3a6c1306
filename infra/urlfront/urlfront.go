// Package urlfront plays a Lambda function URL in front of a function that
// only a Lambda invoke API serves, such as the runtime interface emulator
// (aws-lambda-rie): it turns each plain HTTP request into the function URL
// event Lambda would send (payload 2.0, events.LambdaFunctionURLRequest),
// invokes the function with it, and turns the function's answer back into
// HTTP. The answer is either the streamed form a RESPONSE_STREAM function
// writes (a JSON prelude, eight NUL bytes, the body), passed on as it
// arrives, or the buffered events.LambdaFunctionURLResponse.
//
// It is a local tool, for tests and `runnerctl bridge`: like the real front
// it reads the whole request before invoking, but it signs nothing and
// enforces none of Lambda's quotas.
package urlfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Limits of the front, as Lambda's function URLs have them.
const (
	// MaxRequestBytes is Lambda's synchronous invocation payload limit;
	// the front refuses a larger request body with 413.
	MaxRequestBytes = 6 << 20
	// maxPrelude bounds the JSON prelude of a streamed response, and a
	// buffered response, held whole before anything is written.
	maxPrelude = 8 << 20
)

// DomainName is the requestContext.domainName of the events the front
// sends: a function URL's shape (<url-id>.lambda-url.<region>.on.aws), so
// a function that tells function URLs from API Gateway by their domain
// answers as behind a real one.
const DomainName = "localfront0000000000000000000000.lambda-url.local.on.aws"

// Prelude is the head of a streamed function URL response
// (application/vnd.awslambda.http-integration-response).
type Prelude struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	Cookies    []string          `json:"cookies,omitempty"`
}

// separator ends a streamed response's prelude.
var separator = make([]byte, 8)

// Split splits a whole streamed function URL response into its prelude
// and body.
func Split(raw []byte) (Prelude, []byte, error) {
	head, body, ok := bytes.Cut(raw, separator)
	if !ok {
		return Prelude{}, nil, errors.New("no prelude separator (eight NUL bytes): not a streamed function URL response")
	}
	var p Prelude
	if err := json.Unmarshal(head, &p); err != nil {
		return Prelude{}, nil, fmt.Errorf("the prelude is not JSON: %w", err)
	}
	return p, body, nil
}

// Event is the function URL event Lambda sends for r, whose body is body.
// Headers are lower-cased and a repeated header's values joined with
// commas, cookies moved to the cookies field, and a body that is not UTF-8
// sent base64-encoded, as the real front does.
func Event(r *http.Request, body []byte, now time.Time) events.LambdaFunctionURLRequest {
	headers := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.String())
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = make(map[string]string, len(q))
		for k, v := range q {
			query[k] = strings.Join(v, ",")
		}
	}
	source, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		source = r.RemoteAddr
	}
	ev := events.LambdaFunctionURLRequest{
		Version:               "2.0",
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID:    "anonymous",
			RequestID:    fmt.Sprintf("front-%d", now.UnixNano()),
			APIID:        strings.Split(DomainName, ".")[0],
			DomainName:   DomainName,
			DomainPrefix: strings.Split(DomainName, ".")[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  source,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// Front is an http.Handler that invokes a function for each request.
type Front struct {
	// Invoke is the invoke API's URL for the function, e.g.
	// http://127.0.0.1:9001/2015-03-31/functions/function/invocations
	// for aws-lambda-rie.
	Invoke string
	// Client makes the invocations; http.DefaultClient if nil. Its
	// timeout, if any, bounds a whole response, streams included.
	Client *http.Client
	// Now stamps the events; time.Now if nil.
	Now func() time.Time
}

// ServeHTTP turns r into an invocation and its answer into the response.
// What the front itself cannot do (a body over MaxRequestBytes, an
// unreachable invoke API, an answer that is neither form) is answered
// 413 or 502 with a plain-text reason starting "front:".
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("front: the request body is over %d bytes, Lambda's invocation payload limit", MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "front: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	resp, err := f.invoke(r.Context(), Event(r, body, now()))
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if err := relay(w, resp); err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
	}
}

func (f *Front) invoke(ctx context.Context, ev events.LambdaFunctionURLRequest) (*http.Response, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.Invoke, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("invoke URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	c := f.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoking the function: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("the invoke API answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}

// relay writes the function's answer: a streamed one as it arrives, a
// buffered one whole. It returns an error only before anything was
// written.
func relay(w http.ResponseWriter, resp *http.Response) error {
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head, streamed, err := readHead(br)
	if err != nil {
		return err
	}
	if !streamed {
		return writeBuffered(w, head)
	}
	var p Prelude
	if err := json.Unmarshal(head, &p); err != nil {
		return fmt.Errorf("the streamed response's prelude is not JSON: %w", err)
	}
	writeHead(w, p.StatusCode, p.Headers, p.Cookies)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	// Each chunk goes out as it comes, so events stream when the invoke
	// API streams; a broken stream ends the response where it broke, as
	// a function URL's does.
	buf := make([]byte, 32<<10)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			_ = rc.Flush()
		}
		if err != nil {
			return nil
		}
	}
}

// readHead reads up to the prelude separator (streamed true) or, if there
// is none, the whole answer (streamed false). JSON never holds a NUL byte,
// so the first eight in a row end the prelude.
func readHead(br *bufio.Reader) (head []byte, streamed bool, err error) {
	for {
		chunk, err := br.ReadSlice(0)
		head = append(head, chunk...)
		if len(head) > maxPrelude {
			return nil, false, fmt.Errorf("the function's answer has no prelude in its first %d bytes", maxPrelude)
		}
		if err == nil {
			// A NUL: the separator if the next seven are NULs too.
			next, perr := br.Peek(len(separator) - 1)
			if perr == nil && bytes.Equal(next, separator[1:]) {
				br.Discard(len(next))
				return head[:len(head)-1], true, nil
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return head, false, nil
		}
		return nil, false, fmt.Errorf("reading the function's answer: %w", err)
	}
}

// writeBuffered writes a buffered function URL response, or says why the
// answer is none (a function error, as the invoke API reports it).
func writeBuffered(w http.ResponseWriter, raw []byte) error {
	var probe struct {
		StatusCode   *int   `json:"statusCode"`
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("the function's answer is neither a streamed nor a buffered function URL response: %.200q", raw)
	}
	if probe.StatusCode == nil {
		if probe.ErrorType != "" || probe.ErrorMessage != "" {
			return fmt.Errorf("the function failed: %s: %s", probe.ErrorType, probe.ErrorMessage)
		}
		return fmt.Errorf("the function's answer has no statusCode: %.200q", raw)
	}
	var r events.LambdaFunctionURLResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("the buffered response: %w", err)
	}
	body := []byte(r.Body)
	if r.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(r.Body)
		if err != nil {
			return fmt.Errorf("the buffered response's body is not base64: %w", err)
		}
		body = b
	}
	writeHead(w, r.StatusCode, r.Headers, r.Cookies)
	_, _ = w.Write(body)
	return nil
}

func writeHead(w http.ResponseWriter, status int, headers map[string]string, cookies []string) {
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	for _, c := range cookies {
		w.Header().Add("Set-Cookie", c)
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
}
