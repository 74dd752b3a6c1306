package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// session holds what the checks share: the client and the capabilities.
type session struct {
	base, token string
	hc          *http.Client
	timeout     time.Duration

	capsOnce sync.Once
	caps     map[string]any
	capsErr  error

	streamsMu sync.Mutex
	streams   map[string]*stream
}

func (c *Checker) session() *session {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			DisableKeepAlives:     true,
			ResponseHeaderTimeout: 30 * time.Second,
			// auth.before-body asks for 100-continue: a runner that
			// authenticates first answers without ever getting the body.
			ExpectContinueTimeout: 5 * time.Second,
		}}
	}
	t := c.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return &session{base: strings.TrimRight(c.URL, "/"), token: c.Token, hc: hc, timeout: t}
}

// reply is a whole response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// auth values for send.
const (
	authGood  = "good"
	authNone  = "none"
	authWrong = "wrong"
)

// wrongToken is a token no runner should accept.
const wrongToken = "conformance-check-not-a-valid-token"

// send makes one request and reads the whole answer.
func (s *session) send(ctx context.Context, method, path, auth string, body io.Reader, header ...string) (*reply, error) {
	resp, err := s.do(ctx, method, path, auth, body, header...)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the %d answer: %w", resp.StatusCode, s.scrub(err))
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// do makes one request with the credentials auth names; the caller reads
// and closes the answer.
func (s *session) do(ctx context.Context, method, path, auth string, body io.Reader, header ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	switch auth {
	case authGood:
		req.Header.Set("Authorization", "Bearer "+s.token)
	case authWrong:
		req.Header.Set("Authorization", "Bearer "+wrongToken)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, s.scrub(err)
	}
	return resp, nil
}

// scrub keeps the token out of error text (a URL with credentials, say).
func (s *session) scrub(err error) error {
	if s.token != "" && strings.Contains(err.Error(), s.token) {
		return errors.New(strings.ReplaceAll(err.Error(), s.token, "[REDACTED]"))
	}
	return err
}

// capabilities fetches GET /v1/capabilities once, with the good token.
func (s *session) capabilities(ctx context.Context) (map[string]any, error) {
	s.capsOnce.Do(func() {
		r, err := s.send(ctx, http.MethodGet, "/v1/capabilities", authGood, nil)
		if err != nil {
			s.capsErr = err
			return
		}
		if r.status != http.StatusOK {
			s.capsErr = fmt.Errorf("GET /v1/capabilities answered %d: %s", r.status, clip(r.body))
			return
		}
		if err := json.Unmarshal(r.body, &s.caps); err != nil || s.caps == nil {
			s.capsErr = fmt.Errorf("capabilities are not a JSON object: %s", clip(r.body))
		}
	})
	return s.caps, s.capsErr
}

// notRunner says why what answers at s.base is no runner, or "" when it
// may be one: GET /v1/capabilities, with the good token, must answer
// either a JSON capabilities document with protocolVersions or a protocol
// error (a refused token is still a runner's answer, which the checks
// then report). Anything else (404, an HTML page, a body that is not
// JSON, JSON of another shape, no answer at all) would fail every check
// for the same reason, so the suite stops at once instead.
func (s *session) notRunner(ctx context.Context) string {
	const hint = "check the URL: a runner serves GET /v1/capabilities under it " +
		"(aws-lambda-rie's invoke API is not HTTP of the runner: serve it through runnerctl bridge, docs/deploy.md)"
	r, err := s.send(ctx, http.MethodGet, "/v1/capabilities", authGood, nil)
	if err != nil {
		return fmt.Sprintf("no runner answers: GET %s/v1/capabilities: %v", s.base, err)
	}
	ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	what := fmt.Sprintf("GET %s/v1/capabilities answered %d", s.base, r.status)
	if ct != "" {
		what += " (" + ct + ")"
	}
	var doc map[string]json.RawMessage
	switch {
	case r.status == http.StatusNotFound:
		return fmt.Sprintf("not a Runner protocol v1 runner: %s: %s; %s", what, clip(r.body), hint)
	case ct == "text/html" || bytes.HasPrefix(bytes.TrimSpace(r.body), []byte("<")):
		return fmt.Sprintf("not a Runner protocol v1 runner: %s, an HTML page; %s", what, hint)
	case json.Unmarshal(r.body, &doc) != nil || doc == nil:
		return fmt.Sprintf("not a Runner protocol v1 runner: %s, not a JSON object: %s; %s", what, clip(r.body), hint)
	case r.status == http.StatusOK && doc["protocolVersions"] == nil:
		return fmt.Sprintf("not a Runner protocol v1 runner: %s, JSON without protocolVersions: %s; %s", what, clip(r.body), hint)
	case r.status != http.StatusOK && doc["error"] == nil:
		return fmt.Sprintf("not a Runner protocol v1 runner: %s, neither capabilities nor a protocol error: %s; %s", what, clip(r.body), hint)
	}
	return ""
}

// nodeTypes is the capabilities' nodeTypes as a set.
func (s *session) nodeTypes(ctx context.Context) (map[string]bool, error) {
	caps, err := s.capabilities(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	list, _ := caps["nodeTypes"].([]any)
	for _, v := range list {
		if t, ok := v.(string); ok {
			set[t] = true
		}
	}
	return set, nil
}

// advertised returns the capabilities' runtime object and node types.
func (s *session) advertised(ctx context.Context) (map[string]any, map[string]bool, error) {
	types, err := s.nodeTypes(ctx)
	if err != nil {
		return nil, nil, err
	}
	runtime, _ := s.caps["runtime"].(map[string]any)
	return runtime, types, nil
}

// stream is an accepted execution's answer, read to its end.
type stream struct {
	reply                   // its body only when not 200
	lines  [][]byte         // each line without its newline
	events []map[string]any // nil where a line is not a JSON object
	// tail is what followed the last newline (a line without one).
	tail []byte
	// endErr is how reading ended: nil for EOF.
	endErr error
}

// execute posts body and reads the stream until EOF or the check's
// deadline.
func (s *session) execute(ctx context.Context, body string) (*stream, error) {
	resp, err := s.do(ctx, http.MethodPost, "/v1/executions", authGood, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	st := &stream{reply: reply{status: resp.StatusCode, header: resp.Header}}
	if resp.StatusCode != http.StatusOK {
		st.body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return st, nil
	}
	r := bufio.NewReader(&capped{r: resp.Body, left: maxStreamBytes})
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			st.tail = line
			if !errors.Is(err, io.EOF) {
				st.endErr = s.scrub(err)
			}
			return st, nil
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		st.lines = append(st.lines, line)
		var ev map[string]any
		if json.Unmarshal(line, &ev) != nil {
			ev = nil
		}
		st.events = append(st.events, ev)
	}
}

// maxStreamBytes bounds what the kit reads of one stream, so that a broken
// or hostile runner streaming without end costs bounded memory.
const maxStreamBytes = 32 << 20

// errStreamTooLong ends a stream over maxStreamBytes.
var errStreamTooLong = fmt.Errorf("the stream exceeds %d bytes", maxStreamBytes)

// capped reads at most left bytes, then fails.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errStreamTooLong
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// isTerminal reports whether an event is result or error.
func isTerminal(ev map[string]any) bool {
	return ev != nil && (ev["type"] == "result" || ev["type"] == "error")
}

// clip shortens a body for a reason.
func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
