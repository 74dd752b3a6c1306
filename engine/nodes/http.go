package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/internal/httpfield"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
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

var httpWith = document.With{Required: true, Doc: "One HTTP request.", Fields: []document.Field{
	{Name: "method", Type: document.Text, Default: `"GET"`, Doc: "The request's method."},
	{Name: "url", Type: document.Name, Required: true, Doc: "The URL; a secret may not reach it, not even its path."},
	{Name: "query", Type: document.ObjectOrTemplate, Secrets: true, Doc: "The URL's query parameters."},
	{Name: "headers", Type: document.Type{Kind: document.Object, Values: &document.Text, Template: true}, Secrets: true, Doc: "The request's headers."},
	{Name: "body", Type: document.AnyValue, Secrets: true, Doc: "The request's body."},
	{Name: "timeoutMs", Type: document.IntOrTemplate, Doc: "How long the request may take."},
	{Name: "responseType", Type: document.Type{Kind: document.Enum, Enum: []string{"json", "text", "auto"}}, Default: `"auto"`, Doc: "How the response's body is read."},
	{Name: "failOnStatus", Type: document.Type{Kind: document.Boolean}, Doc: "Fail on a status of 400 or more."},
}}

func (*httpKind) With() *document.With { return &httpWith }

type httpStep struct {
	url, query, headers, body lang.Template
	// secretRefs are the secrets the templates name; allSecrets is set
	// when they use secrets in a way that names none (secrets[k]).
	secretRefs []string
	allSecrets bool
}

// derivedValues lists the strings of the request's headers and query
// that its secrets may have decided, each beside the fields' values with
// the secrets' windows and shadows: the values to learn (LearnSecrets)
// before the request is sent.
func (s *httpStep) derivedValues(req *egress.Request, headers, query [4]any) []engine.SentString {
	var out []engine.SentString
	if secrets.ReadsSecrets(s.headers) {
		var alt [4]map[string]string
		for i := range alt {
			alt[i], _ = headerMap(headers[i])
		}
		for k, v := range req.Headers {
			out = appendSent(out, v, [4]string{alt[0][k], alt[1][k], alt[2][k], alt[3][k]})
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
				out = appendSent(out, v, as)
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
					out = appendSent(out, str, as)
				}
			}
		}
	}
	return out
}

// appendSent appends v with alt: v with the secrets' two windows and
// their two shadows.
func appendSent(out []engine.SentString, v string, alt [4]string) []engine.SentString {
	return append(out, engine.SentString{Value: v, Windows: [2]string{alt[0], alt[1]}, Shadows: [2]string{alt[2], alt[3]}})
}

func (*httpKind) Prepare(c *engine.Compiler) engine.Step {
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
func prepareLiteralURL(c *engine.Compiler, raw string) {
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
func prepareHost(c *engine.Compiler, host string) {
	if policy, ok := c.HTTPPolicy(); ok { // else the policy is invalid, and reported
		if why := policyRefuses(policy, host); why != "" {
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

func prepareLiteralMethod(c *engine.Compiler, m string) {
	// A method is an RFC 9110 token, the syntax of a field name too.
	if !httpfield.ValidName(m) {
		c.Errorf("method", "node %q: %s is not an HTTP method", c.NodeID(), quote(m))
		return
	}
	if policy, ok := c.HTTPPolicy(); ok && len(policy.Methods) > 0 &&
		!slices.ContainsFunc(policy.Methods, func(p string) bool { return strings.EqualFold(p, m) }) {
		c.Errorf("method", "node %q: method %s is not in runtime.http.policy.methods", c.NodeID(), strings.ToUpper(m))
	}
}

func (s *httpStep) Run(ctx context.Context, call *engine.Call) (any, error) {
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
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.url must be a non-empty string, got %s", engine.JSONType(rawURL))
	}
	// The fields that read secrets are evaluated with the secrets'
	// shadows first: whether they fail, and what is learned, cannot
	// depend on the secrets' lengths.
	var shQuery, shHeaders, shBody, winQuery, winHeaders [2]any
	query, err := call.EvalSecret(s.query, &shQuery, &winQuery)
	if err != nil {
		return nil, err
	}
	switch q := query.(type) {
	case nil:
	case map[string]any:
		req.Query = q
	default:
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.query must be an object, got %s", engine.JSONType(query))
	}
	headers, err := call.EvalSecret(s.headers, &shHeaders, &winHeaders)
	if err != nil {
		return nil, err
	}
	if req.Headers, err = headerMap(headers); err != nil {
		return nil, err
	}
	if req.Body, err = call.EvalSecret(s.body, &shBody, nil); err != nil {
		return nil, err
	}
	req.Bound = s.bound(call, req)
	// Before anything is sent: an echo of a value built from a secret is
	// scrubbed like the secret.
	if err := call.LearnSecrets(s.derivedValues(req,
		[4]any{winHeaders[0], winHeaders[1], shHeaders[0], shHeaders[1]},
		[4]any{winQuery[0], winQuery[1], shQuery[0], shQuery[1]})); err != nil {
		return nil, err
	}
	res, err := call.HTTP(ctx, req)
	if err != nil {
		return nil, httpError(ctx, err)
	}
	if res.Status >= 400 && failOnStatus {
		return nil, engine.Errorf(protocol.CodeHTTPError, "%s %s: status %d %s (set failOnStatus: false to get the response)",
			strings.ToUpper(orDefault(req.Method, http.MethodGet)), describeURL(req.URL), res.Status, http.StatusText(res.Status))
	}
	// Scrubbed at the door: no node can read, transform or forward an
	// echo of a secret.
	hdr := make(map[string]any, len(res.Headers))
	for k, v := range res.Headers {
		// Names too: a server can answer with what it was sent as a
		// header's name, which net/http has put in canonical case
		// (Not-A-Real-Token), a form of no secret's own: it is looked
		// for in lower case as well.
		name := k
		if lower := strings.ToLower(k); call.Redact(k) != k || call.Redact(lower) != lower {
			name = redact.Marker
		}
		v = call.Redact(v)
		if prev, ok := hdr[name].(string); ok {
			v = prev + ", " + v
		}
		hdr[name] = v
	}
	return map[string]any{"status": res.Status, "headers": hdr, "body": call.RedactValue(res.Body)}, nil
}

// headerMap reads with.headers: string values, null leaving a header out.
func headerMap(v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, engine.Errorf(protocol.CodeExpressionError, "with.headers must be an object, got %s", engine.JSONType(v))
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch e := e.(type) {
		case nil:
		case string:
			out[k] = e
		default:
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.headers.%s must be a string, got %s", k, engine.JSONType(e))
		}
	}
	return out, nil
}

// bound returns the host-bound secrets the request carries: those its
// templates name (all of them when a template indexes secrets), and
// those whose value appears in the evaluated request anyway.
func (s *httpStep) bound(call *engine.Call, req *egress.Request) []protocol.Secret {
	secrets := call.HTTPSecrets()
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
		return &engine.NodeError{Code: e.Code, Message: e.Message, Err: err}
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
