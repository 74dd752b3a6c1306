package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/runnerd/lambda-runner/engine/nodes"
	"github.com/runnerd/lambda-runner/functions/wiring"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// `runnerctl test --record` runs a case against the real services its
// runtime names, with the runner's own adapters and egress guard, and
// captures every request and answer at the wire: a wrapper of the guarded
// transports (wiring.Options.Wrap, above the guard, so every connection is
// still checked). After the run, the answers are translated into the test
// file's mocks and written into it, redacted.

// maxRecordBody bounds the part of a body the recorder keeps.
const maxRecordBody = 16 << 20

// exchange is one request sent and what answered it.
type exchange struct {
	method    string
	url       string
	reqHeader http.Header
	reqBody   []byte

	mu     sync.Mutex
	err    error // the request got no answer
	status int
	header http.Header
	body   bytes.Buffer
}

// recorder captures the exchanges of one case's execution.
type recorder struct {
	mu  sync.Mutex
	exs []*exchange
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap is wiring.Options.Wrap: next is a guarded transport.
func (rc *recorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		ex := &exchange{method: req.Method, url: req.URL.String(), reqHeader: req.Header.Clone()}
		if req.Body != nil && req.Body != http.NoBody {
			b, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				return nil, err
			}
			ex.reqBody = b
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(b))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		}
		rc.mu.Lock()
		rc.exs = append(rc.exs, ex)
		rc.mu.Unlock()
		resp, err := next.RoundTrip(req)
		ex.mu.Lock()
		defer ex.mu.Unlock()
		if err != nil {
			ex.err = err
			return nil, err
		}
		ex.status, ex.header = resp.StatusCode, resp.Header.Clone()
		resp.Body = &teeBody{ReadCloser: resp.Body, ex: ex}
		return resp, nil
	})
}

// teeBody keeps what is read of a response body.
type teeBody struct {
	io.ReadCloser
	ex *exchange
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.ex.mu.Lock()
		if room := maxRecordBody - t.ex.body.Len(); room > 0 {
			t.ex.body.Write(p[:min(n, room)])
		}
		t.ex.mu.Unlock()
	}
	return n, err
}

// record runs l against the real services of its runtime and, when every
// request was answered, rewrites its file's mocks from the answers. recErr
// is why nothing was written; err an invalid case.
func (r *runner) record(ctx context.Context, l *loaded) (g *got, recErr, err error) {
	// The egress guard as the runner's environment configures it
	// (RUNNER_HTTP_ALLOW_CIDRS, RUNNER_MODEL_ENDPOINTS, RUNNER_HTTP_*); the
	// models are the case's runtime's, as in a test run, never the
	// deployment's table.
	cfg, err := config.Load(r.o.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: case %q: configuration: %v", l.path, l.Name, err), nil
	}
	cfg.Models, cfg.MaxFanOutInvocations = nil, 0
	rc := &recorder{}
	g, err = r.execute(ctx, l, cfg, wiring.Options{Wrap: rc.wrap})
	if err != nil {
		return nil, nil, err
	}
	rec, calls, err := rc.translate(&l.req.Runtime)
	g.Calls = calls
	if r.codeErr != nil && g.Status == "failed" && usesCode(l) {
		g.failures = append(g.failures, r.codeErr.Error())
	}
	if err != nil {
		return g, fmt.Errorf("%s: case %q: %v", l.path, l.Name, err), nil
	}
	if err := writeMocks(l, rec); err != nil {
		return g, fmt.Errorf("%s: case %q: mocks: %v", l.path, l.Name, err), nil
	}
	return g, nil, nil
}

// writeMocks replaces, in l's file, each kind of mock rec holds (models,
// tools, http) with rec's; the other kinds and the pinned nodes are kept,
// and every other member is left as written.
func writeMocks(l *loaded, rec Mocks) error {
	m := l.Mocks
	if len(rec.Models) > 0 {
		m.Models = rec.Models
	}
	if len(rec.Tools) > 0 {
		m.Tools = rec.Tools
	}
	if len(rec.HTTP) > 0 {
		m.HTTP = rec.HTTP
	}
	val, err := indentJSON(m)
	if err != nil {
		return err
	}
	out, err := setMember(l.src, "mocks", val)
	if err != nil {
		return err
	}
	fi, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.path, out, fi.Mode().Perm()); err != nil {
		return err
	}
	l.src, l.Mocks = out, m
	return nil
}

// indentJSON is v as update writes a member: indented under a top-level
// key, HTML left unescaped.
func indentJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// credentialName reports whether a header's name says it carries a
// credential: its values are secrets, and it is never written.
func credentialName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "cookie", "key", "token", "secret", "session", "signature", "credential", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// keptHeader reports whether an http answer's header is written into its
// mock: what a workflow may read of it, never a credential nor what the
// connection alone needs (length, encoding, date).
func keptHeader(name string) bool {
	if credentialName(name) {
		return false
	}
	n := strings.ToLower(name)
	switch n {
	case "content-type", "location", "retry-after", "link", "etag", "last-modified", "cache-control",
		"content-disposition", "content-language", "expires":
		return true
	}
	return strings.HasPrefix(n, "x-")
}

// redactor knows the secrets of the request (model API keys and headers,
// toolset headers, http secrets) and every credential header value sent.
func (rc *recorder) redactor(rt *protocol.Runtime) *redact.Redactor {
	var vals []string
	for _, m := range rt.Models {
		vals = append(vals, m.APIKey)
		for _, v := range m.Headers {
			vals = append(vals, v)
		}
	}
	for _, t := range rt.Toolsets {
		for _, v := range t.Headers {
			vals = append(vals, v)
		}
	}
	for _, s := range rt.HTTP.Secrets {
		vals = append(vals, s.Value)
	}
	for _, ex := range rc.exs {
		for k, vs := range ex.reqHeader {
			if credentialName(k) {
				vals = append(vals, vs...)
			}
		}
	}
	var nonEmpty []string
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			nonEmpty = append(nonEmpty, v)
		}
	}
	return redact.New(nonEmpty...)
}

// translate turns the exchanges into mocks, in the order they were sent,
// and counts them as a test run does. An error is a request that got no
// answer: the recording is incomplete.
func (rc *recorder) translate(rt *protocol.Runtime) (Mocks, Calls, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	red := rc.redactor(rt)
	var out Mocks
	var calls Calls
	names := map[string]string{} // the name a model is shown → toolset/tool
	type modelEx struct {
		entry protocol.Model
		ex    *exchange
	}
	var modelExs []modelEx
	seenTool := map[string]bool{}
	seenHTTP := map[string]bool{}
	for _, ex := range rc.exs {
		ex.mu.Lock()
		err, status, header, body := ex.err, ex.status, ex.header, bytes.Clone(ex.body.Bytes())
		ex.mu.Unlock()
		if errors.Is(err, context.Canceled) {
			continue // given up by the runner (a session closing), not refused
		}
		if err != nil {
			return Mocks{}, calls, fmt.Errorf("%s %s: no answer: %s", ex.method, redactURL(red, ex.url), red.Message(err.Error(), 500))
		}
		if ts, ok := toolsetOf(rt, ex.url); ok {
			method, id, args := jsonRPCRequest(ex.reqBody)
			switch method {
			case "tools/call":
				calls.Tools++
				var p struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				}
				_ = json.Unmarshal(args, &p)
				if status < 200 || status > 299 {
					return Mocks{}, calls, fmt.Errorf("tool call %s/%s: the toolset answered HTTP %d", ts.Name, p.Name, status)
				}
				names[nodes.AgentToolName(ts.Name, p.Name)] = ts.Name + "/" + p.Name
				tm := ToolMock{Toolset: ts.Name, Tool: p.Name}
				if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && string(a) != "null" && string(a) != "{}" {
					tm.Arguments = redactJSON(red, a)
				}
				msg, ok := jsonRPCAnswer(header.Get("Content-Type"), body, id)
				switch {
				case !ok:
					return Mocks{}, calls, fmt.Errorf("tool call %s/%s: no JSON-RPC answer in the toolset's reply", ts.Name, p.Name)
				case msg.Error != nil:
					tm.Error = &ToolError{Code: msg.Error.Code, Message: red.String(msg.Error.Message)}
				default:
					tm.Result = redactJSON(red, msg.Result)
				}
				key := tm.Toolset + "/" + tm.Tool + " " + compact(tm.Arguments)
				if !seenTool[key] { // a later call with the same arguments would be answered by the first
					seenTool[key] = true
					out.Tools = append(out.Tools, tm)
				}
			case "tools/list":
				if msg, ok := jsonRPCAnswer(header.Get("Content-Type"), body, id); ok && msg.Error == nil {
					var res struct {
						Tools []struct {
							Name string `json:"name"`
						} `json:"tools"`
					}
					_ = json.Unmarshal(msg.Result, &res)
					for _, t := range res.Tools {
						names[nodes.AgentToolName(ts.Name, t.Name)] = ts.Name + "/" + t.Name
					}
				}
			}
			continue
		}
		if e, ok := modelOf(rt, ex); ok {
			calls.Models++
			modelExs = append(modelExs, modelEx{e, ex})
			continue
		}
		calls.HTTP++
		hm := HTTPMock{Method: ex.method, URL: redactURL(red, ex.url), Status: status}
		for k, vs := range header {
			// A name a secret reaches is dropped with its value.
			if keptHeader(k) && len(vs) > 0 && red.String(k) == k && red.String(strings.ToLower(k)) == strings.ToLower(k) {
				if hm.Headers == nil {
					hm.Headers = map[string]string{}
				}
				hm.Headers[k] = red.String(strings.Join(vs, ", "))
			}
		}
		hm.Body = mockBody(red, body)
		if key := hm.Method + " " + hm.URL; !seenHTTP[key] { // a later one would be answered by the first
			seenHTTP[key] = true
			out.HTTP = append(out.HTTP, hm)
		}
	}
	// Model replies last: their tool calls are named from the tools the
	// toolsets listed.
	byRole := map[string]int{}
	for _, me := range modelExs {
		rep := modelReply(me.entry.Provider, me.ex, names, red)
		i, ok := byRole[me.entry.Role]
		if !ok {
			i = len(out.Models)
			byRole[me.entry.Role] = i
			out.Models = append(out.Models, ModelMock{Role: me.entry.Role})
		}
		out.Models[i].Replies = append(out.Models[i].Replies, rep)
	}
	return out, calls, nil
}

// redactURL is u with every secret replaced by a glob, so that the mock
// still matches the request, which sends the secret again.
func redactURL(red *redact.Redactor, u string) string {
	return strings.ReplaceAll(red.String(u), redact.Marker, "*")
}

// mockBody is an http answer's body as a mock's: a JSON value as it is,
// anything else as a JSON string (text).
func mockBody(red *redact.Redactor, b []byte) json.RawMessage {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil
	}
	if t[0] != '"' && json.Valid(t) {
		return redactJSON(red, t)
	}
	s, _ := json.Marshal(red.String(strings.ToValidUTF8(string(b), string(utf8.RuneError))))
	return s
}

// redactJSON is the JSON text b with every secret redacted as its
// decoded strings hold it: a service can write a secret with \u escapes
// that the text's bytes never show, so each string and key is redacted
// decoded, and the value written again (then its text once more). Text
// that is not JSON is redacted as bytes.
func redactJSON(red *redact.Redactor, b json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return red.Bytes(b)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(redactValue(red, v)) != nil {
		return red.Bytes(b)
	}
	return red.Bytes(bytes.TrimSpace(buf.Bytes()))
}

// redactValue redacts every string and object key of a decoded value.
func redactValue(red *redact.Redactor, v any) any {
	switch v := v.(type) {
	case string:
		return red.String(v)
	case []any:
		for i := range v {
			v[i] = redactValue(red, v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[red.String(k)] = redactValue(red, e)
		}
		return out
	}
	return v
}

// toolsetOf is the toolset of rt whose url u is (query aside).
func toolsetOf(rt *protocol.Runtime, u string) (protocol.Toolset, bool) {
	got, err := url.Parse(u)
	if err != nil {
		return protocol.Toolset{}, false
	}
	for _, ts := range rt.Toolsets {
		want, err := url.Parse(ts.URL)
		if err != nil {
			continue
		}
		if strings.EqualFold(got.Scheme, want.Scheme) && strings.EqualFold(got.Host, want.Host) &&
			strings.TrimRight(got.Path, "/") == strings.TrimRight(want.Path, "/") {
			return ts, true
		}
	}
	return protocol.Toolset{}, false
}

// modelBase is the URL a model entry's calls go under.
func modelBase(m protocol.Model) string {
	if m.BaseURL != "" {
		return strings.TrimRight(m.BaseURL, "/")
	}
	switch m.Provider {
	case "anthropic":
		return "https://api.anthropic.com"
	case "bedrock":
		return "https://bedrock-runtime."
	}
	return "https://api.openai.com/v1"
}

// modelOf is the model entry of rt that sent ex: its URL is under the
// entry's base and it names the entry's model (the first entry when two
// are alike).
func modelOf(rt *protocol.Runtime, ex *exchange) (protocol.Model, bool) {
	for _, m := range rt.Models {
		base := modelBase(m)
		if !strings.HasPrefix(strings.ToLower(ex.url), strings.ToLower(base)) {
			continue
		}
		if m.Provider == "bedrock" {
			u, err := url.Parse(ex.url)
			if err == nil && strings.Contains(u.Path, "/model/"+m.Model+"/") {
				return m, true
			}
			continue
		}
		var body struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(ex.reqBody, &body)
		if body.Model == m.Model {
			return m, true
		}
	}
	return protocol.Model{}, false
}

// modelReply translates a provider's answer into a reply; names maps the
// tool names the model was shown back to toolset/tool.
func modelReply(provider string, ex *exchange, names map[string]string, red *redact.Redactor) Reply {
	ex.mu.Lock()
	status, body := ex.status, bytes.Clone(ex.body.Bytes())
	ex.mu.Unlock()
	if status < 200 || status > 299 {
		var e struct {
			Message string `json:"message"`
			Error   struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		msg := e.Error.Message
		if msg == "" {
			msg = e.Message
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		return Reply{Error: &ReplyError{Status: status, Message: red.Message(msg, 500)}}
	}
	var rep Reply
	var text strings.Builder
	call := func(name string, args []byte) {
		if n, ok := names[name]; ok {
			name = n
		} else if ts, tool, ok := strings.Cut(name, "__"); ok {
			name = ts + "/" + tool
		}
		a := bytes.TrimSpace(args)
		if len(a) > 0 && !json.Valid(a) {
			a, _ = json.Marshal(string(args))
		}
		rep.ToolCalls = append(rep.ToolCalls, ToolCall{Name: red.String(name), Arguments: redactJSON(red, a)})
	}
	var in, out int64
	switch provider {
	case "anthropic":
		var m struct {
			Content []struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
			Usage struct {
				In  int64 `json:"input_tokens"`
				Out int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(body, &m)
		for _, c := range m.Content {
			switch c.Type {
			case "text":
				text.WriteString(c.Text)
			case "tool_use":
				call(c.Name, c.Input)
			}
		}
		in, out = m.Usage.In, m.Usage.Out
	case "bedrock":
		var m struct {
			Output struct {
				Message struct {
					Content []struct {
						Text    *string `json:"text"`
						ToolUse *struct {
							Name  string          `json:"name"`
							Input json.RawMessage `json:"input"`
						} `json:"toolUse"`
					} `json:"content"`
				} `json:"message"`
			} `json:"output"`
			Usage struct {
				In  int64 `json:"inputTokens"`
				Out int64 `json:"outputTokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(body, &m)
		for _, c := range m.Output.Message.Content {
			if c.Text != nil {
				text.WriteString(*c.Text)
			}
			if c.ToolUse != nil {
				call(c.ToolUse.Name, c.ToolUse.Input)
			}
		}
		in, out = m.Usage.In, m.Usage.Out
	default:
		var m struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
			Usage struct {
				In  int64 `json:"prompt_tokens"`
				Out int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(body, &m)
		if len(m.Choices) > 0 {
			msg := m.Choices[0].Message
			if msg.Content != nil {
				text.WriteString(*msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				call(tc.Function.Name, []byte(tc.Function.Arguments))
			}
		}
		in, out = m.Usage.In, m.Usage.Out
	}
	if text.Len() > 0 || len(rep.ToolCalls) == 0 {
		s := red.String(text.String())
		rep.Text = &s
	}
	if in != 0 || out != 0 {
		rep.Usage = &Usage{InputTokens: in, OutputTokens: out}
	}
	return rep
}

// jsonRPCRequest reads an MCP request: its method, id and params.
func jsonRPCRequest(body []byte) (method string, id, params json.RawMessage) {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method, m.ID, m.Params
}

// rpcMessage is a JSON-RPC answer.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// jsonRPCAnswer finds the answer to request id in an MCP reply: a JSON
// message (or batch), or a stream of server-sent events.
func jsonRPCAnswer(contentType string, body []byte, id json.RawMessage) (rpcMessage, bool) {
	var datas [][]byte
	if strings.HasPrefix(strings.ToLower(contentType), "text/event-stream") {
		var cur []byte
		flush := func() {
			if len(cur) > 0 {
				datas = append(datas, cur)
			}
			cur = nil
		}
		for _, line := range bytes.Split(body, []byte("\n")) {
			line = bytes.TrimRight(line, "\r")
			switch {
			case len(line) == 0:
				flush()
			case bytes.HasPrefix(line, []byte("data:")):
				d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
				if cur != nil {
					cur = append(cur, '\n')
				}
				cur = append(cur, d...)
			}
		}
		flush()
	} else {
		datas = [][]byte{body}
	}
	want := compact(id)
	for _, d := range datas {
		var msgs []rpcMessage
		d = bytes.TrimSpace(d)
		if len(d) > 0 && d[0] == '[' {
			_ = json.Unmarshal(d, &msgs)
		} else {
			var m rpcMessage
			if json.Unmarshal(d, &m) == nil {
				msgs = []rpcMessage{m}
			}
		}
		for _, m := range msgs {
			if compact(m.ID) == want && (m.Result != nil || m.Error != nil) {
				return m, true
			}
		}
	}
	return rpcMessage{}, false
}
