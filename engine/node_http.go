package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/runnerd/lambda-runner/engine/authorjson"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
	"golang.org/x/net/http/httpguts"
)

// httpKind sends one HTTP request through the execution's guarded egress
// client (engine/egress):
//
//	with: {method, url, query, headers, body, timeoutMs, responseType, failOnStatus}
//	output: {status, headers, body}
//
// url, query, headers and body are the only fields where secrets.NAME is
// in scope. A secret bound to hosts travels only to those hosts: the node
// binds to its request every host-bound secret its templates name, and
// every one whose value the evaluated request carries anyway (through
// another node's output, say), so egress refuses any hop elsewhere,
// redirects included.
//
// Each hop is authorized (http.request on its host) before it is sent; for
// a literal URL the first hop's decision is made in preflight. A status of
// 400 or more fails the node with HTTP_ERROR unless failOnStatus is false;
// egress refusals are HTTP_BLOCKED and transport failures HTTP_ERROR.
type httpKind struct{}

type httpStep struct {
	url, query, headers, body lang.Template
	// secretRefs are the secrets the templates name; allSecrets is set
	// when they use secrets in a way that names none (secrets[k]).
	secretRefs []string
	allSecrets bool
}

// evalSecret evaluates a request field: a template that reads secrets
// first with each of their shadows (see secrets.Shadows), which decide
// whether it fails, and then with the secrets. sh gets the shadows'
// values and, unless it is nil, win the values with the secrets' windows
// (see secrets.Windows).
func evalSecret(call *Call, t lang.Template, sh, win *[2]any) (any, error) {
	if !secrets.ReadsSecrets(t) {
		return call.Eval(t)
	}
	with := func(secrets map[string]any) (any, error) {
		ev := newEvaluator(call.evalContext(), call.sc, t, call.n.sight)
		ev.SetSecrets(secrets)
		return ev.Eval(t)
	}
	for i := range sh {
		v, err := with(call.r.x.shadows[i])
		if err != nil {
			return nil, err
		}
		sh[i] = v
	}
	v, err := call.Eval(t)
	if err != nil || win == nil {
		return v, err
	}
	if reflect.DeepEqual(sh[0], sh[1]) {
		// The secrets reach nothing of the value (`'qT' ?? secrets.k`).
		*win = *sh
		return v, nil
	}
	for i := range win {
		// As long as the secrets, so no more costly: what the shadows
		// pass, these pass.
		w, err := with(call.r.x.windows[i])
		if err != nil {
			return nil, err
		}
		win[i] = w
	}
	return v, nil
}

// derivedValues lists the parts of the request's header and query values
// that its secrets decided (see secrets.DerivedPart), from the fields' values with
// the secrets' windows and shadows: the values to add to the redactor
// before the request is sent.
func (s *httpStep) derivedValues(req *egress.Request, headers, query [4]any) []secrets.Derived {
	var out []secrets.Derived
	if secrets.ReadsSecrets(s.headers) {
		var alt [4]map[string]string
		for i := range alt {
			alt[i], _ = headerMap(headers[i])
		}
		for k, v := range req.Headers {
			out = appendDerived(out, v, [4]string{alt[0][k], alt[1][k], alt[2][k], alt[3][k]})
		}
	}
	if secrets.ReadsSecrets(s.query) {
		var alt [4]map[string]any
		for i := range alt {
			alt[i], _ = query[i].(map[string]any)
		}
		for k, v := range req.Query {
			switch v := v.(type) {
			case string:
				var as [4]string
				for i := range as {
					as[i], _ = alt[i][k].(string)
				}
				out = appendDerived(out, v, as)
			case []any:
				for j, e := range v {
					str, ok := e.(string)
					if !ok {
						continue
					}
					var as [4]string
					for i := range as {
						if l, _ := alt[i][k].([]any); j < len(l) {
							as[i], _ = l[j].(string)
						}
					}
					out = appendDerived(out, str, as)
				}
			}
		}
	}
	return out
}

// appendDerived appends the part of v its secrets decided, from alt: v
// with the secrets' two windows and their two shadows.
func appendDerived(out []secrets.Derived, v string, alt [4]string) []secrets.Derived {
	if d := secrets.DerivedPart(v, alt[0], alt[1], alt[2], alt[3]); d.Value != "" || d.Key != "" {
		out = append(out, d)
	}
	return out
}

func (httpKind) Prepare(c *Compiler) Step {
	c.With("url", "query", "headers", "body")
	s := &httpStep{
		url:     c.SecretTemplate("url"),
		query:   c.SecretTemplate("query"),
		headers: c.SecretTemplate("headers"),
		body:    c.SecretTemplate("body"),
	}
	if secrets.ReadsSecrets(s.url) {
		// Not even the path: a URL decides where a request goes and is
		// quoted in errors and logs, so the secret's characters could
		// change which error comes back (issue 18, class 1).
		c.Errorf("url", "node %q: a secret may not be part of with.url (its scheme, host, port or path): send it in a header, a query value or the body", c.NodeID())
	}
	for _, t := range []lang.Template{s.url, s.query, s.headers, s.body} {
		names, all := t.Secrets()
		for _, name := range names {
			if !slices.Contains(s.secretRefs, name) {
				s.secretRefs = append(s.secretRefs, name)
			}
		}
		s.allSecrets = s.allSecrets || all
	}
	if raw, ok := c.Literal("url"); ok {
		prepareLiteralURL(c, raw)
	} else if raw, _ := c.Raw("url"); raw != nil {
		if host, ok := templatedHost(raw); ok {
			prepareHost(c, host)
		}
	}
	if m, ok := c.Literal("method"); ok {
		prepareLiteralMethod(c, m)
	}
	f := c.Fields()
	f.Int("timeoutMs", 0, math.MaxInt)
	f.Bool("failOnStatus")
	return s
}

// prepareLiteralURL checks a URL known before the run: its scheme, and its
// host against the policy's hosts lists, and declares the first hop's
// http.request for preflight. The address the host resolves to is checked
// when the request is sent, as only then is it known.
func prepareLiteralURL(c *Compiler, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		// Not quoted: even a literal URL may carry a token in its query.
		c.Errorf("url", "node %q: must be an absolute http or https URL", c.NodeID())
		return
	}
	prepareHost(c, permission.NormalizeHost(u.Host))
}

// prepareHost checks the host of the first hop, known before the run,
// against the policy's hosts lists and declares its http.request.
func prepareHost(c *Compiler, host string) {
	if c.services().http != nil { // else the policy is invalid, and reported
		if why := policyRefuses(c.services().policy, host); why != "" {
			c.Errorf("url", "node %q: host %s %s", c.NodeID(), host, why)
			return
		}
	}
	c.StaticAction(protocol.ActionHTTPRequest, host)
}

// templatedHost returns the host of a templated URL whose scheme and
// host are written out before the first template, as in
// "https://api.example.com/issues/${{ input.issue }}": the host cannot
// change at run time, so it is decided before anything runs like a literal
// URL's.
func templatedHost(raw any) (string, bool) {
	s, _ := raw.(string)
	i := strings.Index(s, "${{")
	if i < 0 {
		return "", false
	}
	prefix := s[:i]
	var rest string
	switch {
	case strings.HasPrefix(prefix, "https://"):
		rest = prefix[len("https://"):]
	case strings.HasPrefix(prefix, "http://"):
		rest = prefix[len("http://"):]
	default:
		return "", false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return "", false // the template may still be part of the host
	}
	authority := rest[:end]
	if authority == "" || strings.ContainsAny(authority, "@$") {
		return "", false // userinfo is refused by egress, at run time
	}
	u, err := url.Parse("http://" + authority + "/")
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	return permission.NormalizeHost(u.Host), true
}

// policyRefuses applies runtime.http.policy's hosts lists as egress does
// (denyHosts first, then allowHosts) and says why a host is refused, or "".
func policyRefuses(p protocol.HTTPPolicy, host string) string {
	for _, d := range p.DenyHosts {
		if glob.MatchHost(d, host) {
			return "is denied by runtime.http.policy.denyHosts pattern " + quote(d)
		}
	}
	if len(p.AllowHosts) == 0 {
		return ""
	}
	for _, a := range p.AllowHosts {
		if glob.MatchHost(a, host) {
			return ""
		}
	}
	return "is not in runtime.http.policy.allowHosts"
}

func prepareLiteralMethod(c *Compiler, m string) {
	// A method is an RFC 9110 token, the syntax of a field name too.
	if !httpguts.ValidHeaderFieldName(m) {
		c.Errorf("method", "node %q: %s is not an HTTP method", c.NodeID(), quote(m))
		return
	}
	if methods := c.services().policy.Methods; c.services().http != nil && len(methods) > 0 &&
		!slices.ContainsFunc(methods, func(p string) bool { return strings.EqualFold(p, m) }) {
		c.Errorf("method", "node %q: method %s is not in runtime.http.policy.methods", c.NodeID(), strings.ToUpper(m))
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (s *httpStep) Run(ctx context.Context, call *Call) (any, error) {
	req := &egress.Request{}
	f := call.Fields()
	req.Method, _ = f.String("method")
	req.ResponseType, _ = f.String("responseType")
	req.MaxDecoded = call.Limits().MaxOutputBytes
	timeoutMs, _ := f.Int("timeoutMs", 0, math.MaxInt)
	req.Timeout = time.Duration(timeoutMs) * time.Millisecond
	failOnStatus, set := f.Bool("failOnStatus")
	failOnStatus = failOnStatus || !set
	if err := f.Err(); err != nil {
		return nil, err
	}

	// The request fields see secrets: their values stay out of messages.
	rawURL, err := call.Eval(s.url)
	if err != nil {
		return nil, err
	}
	if req.URL, _ = rawURL.(string); req.URL == "" {
		return nil, Errorf(protocol.CodeExpressionError, "with.url must be a non-empty string, got %s", jsonKind(rawURL))
	}
	// The fields that read secrets are evaluated with the secrets'
	// shadows first: whether they fail, and what is learned, cannot
	// depend on the secrets' lengths.
	var shQuery, shHeaders, shBody, winQuery, winHeaders [2]any
	query, err := evalSecret(call, s.query, &shQuery, &winQuery)
	if err != nil {
		return nil, err
	}
	switch q := query.(type) {
	case nil:
	case map[string]any:
		req.Query = q
	default:
		return nil, Errorf(protocol.CodeExpressionError, "with.query must be an object, got %s", jsonKind(query))
	}
	headers, err := evalSecret(call, s.headers, &shHeaders, &winHeaders)
	if err != nil {
		return nil, err
	}
	if req.Headers, err = headerMap(headers); err != nil {
		return nil, err
	}
	if req.Body, err = evalSecret(call, s.body, &shBody, nil); err != nil {
		return nil, err
	}
	req.Bound = s.bound(call, req)
	// Before anything is sent: an echo of a value built from a secret is
	// scrubbed like the secret.
	if err := call.scrub().Learn(s.derivedValues(req,
		[4]any{winHeaders[0], winHeaders[1], shHeaders[0], shHeaders[1]},
		[4]any{winQuery[0], winQuery[1], shQuery[0], shQuery[1]})...); err != nil {
		return nil, err
	}
	req.Authorize = func(ctx context.Context, host string) error {
		return call.Authorize(ctx, protocol.ActionHTTPRequest, host)
	}

	// The URL with its query escaped is the author's value too (a control
	// character is three bytes): charged as net/http holds it
	// (encode_sent.go), held until the request is done.
	sentURL, err := call.r.chargeAuthor("with.url and with.query (as the request holds them once escaped)", urlHeld*authorjson.QuerySize(req.URL, req.Query))
	if err != nil {
		return nil, err
	}
	defer sentURL.release()

	// A JSON body is the author's value: sized, charged and encoded once
	// (encodeAuthor), held until the request is done.
	switch req.Body.(type) {
	case nil, string, []byte:
	default:
		body, err := call.r.encodeAuthor(ctx, "with.body", req.Body, call.Limits().MemoryBudget)
		if err != nil {
			return nil, err
		}
		defer body.release()
		req.Body = json.RawMessage(body.B)
	}
	res, err := call.services().http.Do(ctx, req)
	if err != nil {
		return nil, httpError(ctx, err)
	}
	if res.Status >= 400 && failOnStatus {
		return nil, Errorf(protocol.CodeHTTPError, "%s %s: status %d %s (set failOnStatus: false to get the response)",
			strings.ToUpper(orDefault(req.Method, http.MethodGet)), describeURL(req.URL), res.Status, http.StatusText(res.Status))
	}
	// Scrubbed at the door: no node can read, transform or forward an
	// echo of a secret.
	sc := call.scrub()
	hdr := make(map[string]any, len(res.Headers))
	for k, v := range res.Headers {
		// Names too: a server can answer with what it was sent as a
		// header's name, which net/http has put in canonical case
		// (Not-A-Real-Token), a form of no secret's own: it is looked
		// for in lower case as well.
		name := k
		if lower := strings.ToLower(k); sc.String(k) != k || sc.String(lower) != lower {
			name = redact.Marker
		}
		v = sc.String(v)
		if prev, ok := hdr[name].(string); ok {
			v = prev + ", " + v
		}
		hdr[name] = v
	}
	return map[string]any{"status": res.Status, "headers": hdr, "body": sc.Value(res.Body)}, nil
}

// headerMap reads with.headers: string values, null leaving a header out.
func headerMap(v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, Errorf(protocol.CodeExpressionError, "with.headers must be an object, got %s", jsonKind(v))
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch e := e.(type) {
		case nil:
		case string:
			out[k] = e
		default:
			return nil, Errorf(protocol.CodeExpressionError, "with.headers.%s must be a string, got %s", k, jsonKind(e))
		}
	}
	return out, nil
}

// bound returns the host-bound secrets the request carries: those its
// templates name (all of them when a template indexes secrets), and
// those whose value appears in the evaluated request anyway.
func (s *httpStep) bound(call *Call, req *egress.Request) []protocol.Secret {
	secrets := call.httpSecrets()
	var out []protocol.Secret
	var text string
	scanned := false
	for _, name := range sortedKeys(secrets) {
		sec := secrets[name]
		if len(sec.Hosts) == 0 || sec.Value == "" {
			continue
		}
		if s.allSecrets || slices.Contains(s.secretRefs, name) {
			out = append(out, sec)
			continue
		}
		if !scanned {
			b, _ := json.Marshal([]any{req.URL, req.Query, req.Headers, req.Body})
			text, scanned = req.URL+"\x00"+string(b), true
		}
		esc, _ := json.Marshal(sec.Value)
		if strings.Contains(text, sec.Value) || strings.Contains(text, string(esc[1:len(esc)-1])) {
			out = append(out, sec)
		}
	}
	return out
}

// httpError maps what egress returned to the node's error. A request that
// ended with its context is left to the scheduler; a permission error (a
// denial, a suspension) is returned as the gate made it.
func httpError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var e *egress.Error
	if errors.As(err, &e) {
		return &NodeError{Code: e.Code, Message: e.Message, Err: err}
	}
	return err
}

// describeURL renders a URL for a message: its scheme, host and path,
// without its userinfo or query, which may hold a secret. The message is
// redacted as every node error is: a secret in the path is not shown.
func describeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}
