package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"time"
)

// The execution bodies of the checks. Only set and fail nodes run.
const (
	bodyMinimal = `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","needs":["a"],"with":{"value":2}}]}}`
	bodyFailing = `{"version":1,"workflow":{"nodes":[{"id":"boom","type":"fail","with":{"message":"conformance check","code":"CONFORMANCE"}}]}}`
	bodyWrongV  = `{"version":2,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`
	bodyNoV     = `{"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`
)

// suite is every check, in order.
var suite = []check{
	{"auth.missing-token", "a request without a bearer token is refused 401 UNAUTHORIZED, on both routes", checkAuth(authNone)},
	{"auth.wrong-token", "a request with an unknown bearer token is refused 401 UNAUTHORIZED, on both routes", checkAuth(authWrong)},
	{"auth.before-body", "authentication is decided before the request body is read", checkAuthBeforeBody},
	{"capabilities.shape", "GET /v1/capabilities answers 200 JSON with version 1, protocolVersions including 1, runner, nodeTypes, runtime, streaming and constraints", checkCapabilities},
	{"invalid.unsupported-version", "an unsupported version is 400 INVALID_EXECUTION with no accepted event", checkInvalid(bodyWrongV)},
	{"invalid.missing-version", "a request without version is 400 INVALID_EXECUTION with no accepted event", checkInvalid(bodyNoV)},
	{"invalid.malformed", "a body that is not a JSON object, or is cut short, is 400 INVALID_EXECUTION with no accepted event", checkInvalid("not json", `{"version":1,"workflow":`, `[1]`)},
	{"invalid.unadvertised-node-type", "only advertised node types are accepted: any other is 400 INVALID_EXECUTION with no accepted event", checkUnadvertised},
	{"stream.content-type", "an accepted execution is 200 application/x-ndjson", streamCheck(bodyMinimal, checkContentType)},
	{"stream.accepted-first", "the first event is accepted, with an executionId", streamCheck(bodyMinimal, checkAcceptedFirst)},
	{"stream.version", "every event is a JSON object with version 1, a type and the execution's one executionId", streamCheck(bodyMinimal, checkEveryEvent)},
	{"stream.one-terminal", "exactly one terminal event (result or error) and it is the last", streamCheck(bodyMinimal, checkOneTerminal)},
	{"stream.closed-after-terminal", "the connection closes after the terminal event, nothing follows it", streamCheck(bodyMinimal, checkClosed)},
	{"stream.completed-result", "a workflow of set nodes ends with result status completed", streamCheck(bodyMinimal, checkCompleted)},
	{"stream.failure-error", "a failing workflow ends with one error event, code EXECUTION_FAILED, after accepted", streamCheck(bodyFailing, checkFailure)},
	{"models.general-fallback", "a role missing from runtime.models falls back to general (no 400)", checkGeneralFallback},
	{"consent.suspends", "a tool needing consent, with consentAvailable, suspends: permission.decision consent, node.suspended, result suspended naming the node", checkConsent},
}

func failf(format string, args ...any) (Status, string) { return Fail, fmt.Sprintf(format, args...) }

func skipf(format string, args ...any) (Status, string) { return Skip, fmt.Sprintf(format, args...) }

// errorCode decodes a protocol error body; problems are reported.
func errorCode(r *reply) (string, error) {
	ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	var e struct {
		Version *int `json:"version"`
		Error   struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		return "", fmt.Errorf("error body is not JSON: %s", clip(r.body))
	}
	if ct != "application/json" {
		return e.Error.Code, fmt.Errorf("error body has Content-Type %q, want application/json", r.header.Get("Content-Type"))
	}
	if e.Version == nil || *e.Version != 1 {
		return e.Error.Code, fmt.Errorf("error body lacks version 1: %s", clip(r.body))
	}
	if e.Error.Message == "" {
		return e.Error.Code, fmt.Errorf("error body has no error.message: %s", clip(r.body))
	}
	return e.Error.Code, nil
}

func checkAuth(auth string) func(context.Context, *session) (Status, string) {
	return func(ctx context.Context, s *session) (Status, string) {
		for _, rt := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/capabilities", ""},
			{http.MethodPost, "/v1/executions", bodyMinimal},
		} {
			var body io.Reader
			if rt.body != "" {
				body = strings.NewReader(rt.body)
			}
			r, err := s.send(ctx, rt.method, rt.path, auth, body)
			if err != nil {
				return failf("%s %s: %v", rt.method, rt.path, err)
			}
			if r.status != http.StatusUnauthorized {
				return failf("%s %s answered %d, want 401", rt.method, rt.path, r.status)
			}
			code, err := errorCode(r)
			if err != nil {
				return failf("%s %s: %v", rt.method, rt.path, err)
			}
			if code != "UNAUTHORIZED" {
				return failf("%s %s: error code %q, want UNAUTHORIZED", rt.method, rt.path, code)
			}
			if bytes.Contains(r.body, []byte(wrongToken)) {
				return failf("%s %s: the refusal echoes the token", rt.method, rt.path)
			}
		}
		return Pass, ""
	}
}

// checkAuthBeforeBody sends a wrong token, asks for 100-continue and holds
// the body back. A runner that authenticates first answers without it. Behind a front that buffers
// whole requests (Lambda function URLs do) the body is sent after a wait; it
// is then an invalid request, so a runner that read it before the token
// would answer 400, not 401.
func checkAuthBeforeBody(ctx context.Context, s *session) (Status, string) {
	pr, pw := io.Pipe()
	type answer struct {
		r   *reply
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		r, err := s.send(ctx, http.MethodPost, "/v1/executions", authWrong, pr, "Expect", "100-continue")
		answers <- answer{r, err}
	}()
	var a answer
	select {
	case a = <-answers:
	case <-time.After(2 * time.Second):
		go func() {
			pw.Write([]byte(bodyWrongV))
			pw.Close()
		}()
		a = <-answers
	}
	pw.CloseWithError(errors.New("answered"))
	if a.err != nil {
		return failf("POST /v1/executions: %v", a.err)
	}
	if a.r.status != http.StatusUnauthorized {
		return failf("a wrong token with an invalid body answered %d, want 401: the body was judged before the token", a.r.status)
	}
	return Pass, ""
}

func checkCapabilities(ctx context.Context, s *session) (Status, string) {
	caps, err := s.capabilities(ctx)
	if err != nil {
		return failf("%v", err)
	}
	var problems []string
	want := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	num := func(m map[string]any, k string) (float64, bool) { v, ok := m[k].(float64); return v, ok }
	obj := func(m map[string]any, k string) map[string]any { v, _ := m[k].(map[string]any); return v }
	v, ok := num(caps, "version")
	want(ok && v == 1, "version is not 1")
	pv, _ := caps["protocolVersions"].([]any)
	has1 := false
	for _, x := range pv {
		has1 = has1 || x == float64(1)
	}
	want(has1, "protocolVersions does not include 1")
	runner := obj(caps, "runner")
	name, _ := runner["name"].(string)
	want(name != "", "runner.name is missing")
	types, isList := caps["nodeTypes"].([]any)
	want(isList && len(types) > 0, "nodeTypes is not a non-empty array")
	for _, t := range types {
		if _, ok := t.(string); !ok {
			problems = append(problems, "nodeTypes has a non-string entry")
			break
		}
	}
	want(obj(caps, "runtime") != nil, "runtime is not an object")
	ct, _ := obj(caps, "streaming")["contentType"].(string)
	want(ct == "application/x-ndjson", "streaming.contentType is %q, want application/x-ndjson", ct)
	cons := obj(caps, "constraints")
	want(cons != nil, "constraints is not an object")
	for k, x := range cons {
		if f, ok := x.(float64); !ok || f < 0 {
			problems = append(problems, fmt.Sprintf("constraints.%s is not a non-negative number", k))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return failf("%s", strings.Join(problems, "; "))
	}
	return Pass, ""
}

// refusedInvalid holds a 400 to the rules: INVALID_EXECUTION, JSON, and no
// accepted event in whatever came back.
func refusedInvalid(st *stream, what string) (Status, string) {
	if st.status == http.StatusOK {
		return failf("%s was accepted (200): the execution started", what)
	}
	if st.status != http.StatusBadRequest {
		return failf("%s answered %d, want 400", what, st.status)
	}
	if bytes.Contains(st.body, []byte(`"accepted"`)) {
		return failf("%s: the 400 carries an accepted event", what)
	}
	code, err := errorCode(&st.reply)
	if err != nil {
		return failf("%s: %v", what, err)
	}
	if code != "INVALID_EXECUTION" {
		return failf("%s: error code %q, want INVALID_EXECUTION", what, code)
	}
	return Pass, ""
}

func checkInvalid(bodies ...string) func(context.Context, *session) (Status, string) {
	return func(ctx context.Context, s *session) (Status, string) {
		for _, b := range bodies {
			st, err := s.execute(ctx, b)
			if err != nil {
				return failf("body %s: %v", clip([]byte(b)), err)
			}
			if v, reason := refusedInvalid(st, "body "+clip([]byte(b))); v != Pass {
				return v, reason
			}
		}
		return Pass, ""
	}
}

// knownTypes are node types of the protocol's ecosystem that a runner may
// or may not advertise; the made-up one no runner has.
var knownTypes = []string{"conformance.no-such-type", "set", "fail", "map", "workflow", "wait", "approval", "value.get", "value.set"}

func checkUnadvertised(ctx context.Context, s *session) (Status, string) {
	types, err := s.nodeTypes(ctx)
	if err != nil {
		return failf("%v", err)
	}
	for _, t := range knownTypes {
		if types[t] {
			continue
		}
		body := fmt.Sprintf(`{"version":1,"workflow":{"nodes":[{"id":"x","type":%q,"with":{}}]}}`, t)
		st, err := s.execute(ctx, body)
		if err != nil {
			return failf("node type %q: %v", t, err)
		}
		if v, reason := refusedInvalid(st, fmt.Sprintf("unadvertised node type %q", t)); v != Pass {
			return v, reason
		}
	}
	return Pass, ""
}

// streamCheck runs body once per session and body and judges the stream.
func streamCheck(body string, judge func(*stream) (Status, string)) func(context.Context, *session) (Status, string) {
	return func(ctx context.Context, s *session) (Status, string) {
		types, err := s.nodeTypes(ctx)
		if err != nil {
			return failf("%v", err)
		}
		need := "set"
		if body == bodyFailing {
			need = "fail"
		}
		if !types[need] {
			return skipf("the runner does not advertise %q, the side-effect-free node type this check runs", need)
		}
		st, err := s.streamOf(ctx, body)
		if err != nil {
			return failf("POST /v1/executions: %v", err)
		}
		if st.status != http.StatusOK {
			return failf("a valid execution answered %d: %s", st.status, clip(st.body))
		}
		return judge(st)
	}
}

// streamOf runs each body once and keeps the stream for every check of it.
func (s *session) streamOf(ctx context.Context, body string) (*stream, error) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if st, ok := s.streams[body]; ok {
		return st, nil
	}
	st, err := s.execute(ctx, body)
	if err != nil {
		return nil, err
	}
	if s.streams == nil {
		s.streams = map[string]*stream{}
	}
	s.streams[body] = st
	return st, nil
}

func checkContentType(st *stream) (Status, string) {
	ct, _, err := mime.ParseMediaType(st.header.Get("Content-Type"))
	if err != nil || ct != "application/x-ndjson" {
		return failf("Content-Type %q, want application/x-ndjson", st.header.Get("Content-Type"))
	}
	return Pass, ""
}

func checkAcceptedFirst(st *stream) (Status, string) {
	if len(st.events) == 0 {
		return failf("the stream has no complete line")
	}
	first := st.events[0]
	if first == nil || first["type"] != "accepted" {
		return failf("first line is not accepted: %s", clip(st.lines[0]))
	}
	if id, _ := first["executionId"].(string); id == "" {
		return failf("accepted has no executionId")
	}
	for i, ev := range st.events[1:] {
		if ev != nil && ev["type"] == "accepted" {
			return failf("a second accepted event at line %d", i+2)
		}
	}
	return Pass, ""
}

func checkEveryEvent(st *stream) (Status, string) {
	var id any
	for i, ev := range st.events {
		switch {
		case ev == nil:
			return failf("line %d is not a JSON object: %s", i+1, clip(st.lines[i]))
		case ev["version"] != float64(1):
			return failf("line %d (%v) has version %v, want 1", i+1, ev["type"], ev["version"])
		case ev["type"] == nil || ev["type"] == "":
			return failf("line %d has no type", i+1)
		case i == 0:
			id = ev["executionId"]
		case ev["executionId"] != id:
			return failf("line %d has executionId %v, not the accepted event's %v", i+1, ev["executionId"], id)
		}
	}
	if len(st.events) == 0 {
		return failf("the stream has no complete line")
	}
	return Pass, ""
}

func checkOneTerminal(st *stream) (Status, string) {
	n := 0
	for i, ev := range st.events {
		if isTerminal(ev) {
			n++
			if i != len(st.events)-1 {
				return failf("terminal event %v at line %d is followed by %d more line(s)", ev["type"], i+1, len(st.events)-1-i)
			}
		}
	}
	switch {
	case n == 0 && len(st.tail) > 0:
		return failf("the last line has no newline: %s", clip(st.tail))
	case n == 0:
		return failf("no terminal event (result or error)")
	}
	return Pass, ""
}

func checkClosed(st *stream) (Status, string) {
	if st.endErr != nil {
		return failf("the stream did not end cleanly after %d line(s): %v", len(st.lines), st.endErr)
	}
	if len(bytes.TrimSpace(st.tail)) > 0 {
		return failf("bytes after the last newline: %s", clip(st.tail))
	}
	if len(st.events) == 0 || !isTerminal(st.events[len(st.events)-1]) {
		return failf("the stream closed without a terminal event last")
	}
	return Pass, ""
}

func last(st *stream) map[string]any {
	if len(st.events) == 0 {
		return nil
	}
	return st.events[len(st.events)-1]
}

func checkCompleted(st *stream) (Status, string) {
	ev := last(st)
	if ev == nil || ev["type"] != "result" || ev["status"] != "completed" {
		return failf("the last event is not result/completed: %s", clip(lastLine(st)))
	}
	return Pass, ""
}

func lastLine(st *stream) []byte {
	if len(st.lines) == 0 {
		return st.tail
	}
	return st.lines[len(st.lines)-1]
}

func checkFailure(st *stream) (Status, string) {
	if v, reason := checkAcceptedFirst(st); v != Pass {
		return v, reason
	}
	if v, reason := checkOneTerminal(st); v != Pass {
		return v, reason
	}
	ev := last(st)
	e, _ := ev["error"].(map[string]any)
	if ev["type"] != "error" || e["code"] != "EXECUTION_FAILED" {
		return failf("the last event is not error/EXECUTION_FAILED: %s", clip(lastLine(st)))
	}
	return Pass, ""
}

// checkGeneralFallback names a role the request's runtime.models lacks,
// with general present. The request allows no capability (permissions: []),
// so the model call is denied before it is made; the endpoint does not
// resolve anyway.
func checkGeneralFallback(ctx context.Context, s *session) (Status, string) {
	runtime, types, err := s.advertised(ctx)
	if err != nil {
		return failf("%v", err)
	}
	models, _ := runtime["models"].(map[string]any)
	providers, _ := models["providers"].([]any)
	if !types["model"] || len(providers) == 0 {
		return skipf("the runner advertises no model node or no model provider")
	}
	provider, _ := providers[0].(string)
	for _, p := range providers {
		if p == "openai" || p == "anthropic" {
			provider = p.(string)
			break
		}
	}
	model := map[string]any{"role": "general", "provider": provider, "model": "conformance-model",
		"apiKey": "conformance-not-a-key", "baseUrl": "https://conformance.invalid/v1"}
	if provider == "bedrock" {
		model["region"] = "us-east-1"
	}
	body, _ := json.Marshal(map[string]any{
		"version": 1,
		"workflow": map[string]any{"nodes": []any{map[string]any{"id": "m", "type": "model",
			"with": map[string]any{"role": "conformance-missing-role", "prompt": "conformance check"}}}},
		"runtime":     map[string]any{"models": []any{model}},
		"permissions": []string{},
	})
	_, v, reason := runToEnd(ctx, s, string(body), "a role missing from runtime.models, with general present,")
	return v, reason
}

// checkConsent asks for a tool whose policy needs consent. The toolset's
// URL does not resolve: a runner that called it instead of suspending
// fails the check without reaching anything.
func checkConsent(ctx context.Context, s *session) (Status, string) {
	runtime, types, err := s.advertised(ctx)
	if err != nil {
		return failf("%v", err)
	}
	if runtime["consent"] != "suspend" {
		return skipf("the runner does not advertise runtime.consent \"suspend\"")
	}
	if !types["tool"] {
		return skipf("the runner advertises consent but no tool node to ask it for")
	}
	const body = `{"version":1,"workflow":{"nodes":[{"id":"page","type":"tool","with":{"toolset":"conformance","tool":"page"}}]},
"runtime":{"toolsets":[{"name":"conformance","url":"https://conformance.invalid/mcp","transport":"streamable-http"}]},
"toolPolicies":[{"match":"conformance/*","decision":"consent"}],"consentAvailable":true}`
	st, v, reason := runToEnd(ctx, s, body, "the consent request")
	if v != Pass {
		return v, reason
	}
	var decided, suspended bool
	for _, ev := range st.events {
		switch {
		case ev["type"] == "permission.decision" && ev["decision"] == "consent" && ev["nodeId"] == "page":
			decided = true
		case ev["type"] == "node.suspended" && ev["nodeId"] == "page":
			suspended = true
		case ev["type"] == "node.started" && ev["nodeId"] == "page":
			return failf("the tool node started before its consent was given")
		}
	}
	res := last(st)
	list, _ := res["suspended"].([]any)
	named := false
	for _, x := range list {
		if m, _ := x.(map[string]any); m["nodeId"] == "page" {
			named = true
		}
	}
	switch {
	case res["type"] != "result" || res["status"] != "suspended":
		return failf("the execution did not end result/suspended: %s", clip(lastLine(st)))
	case !named:
		return failf("result.suspended[] does not name node page")
	case !decided:
		return failf("no permission.decision consent for node page")
	case !suspended:
		return failf("no node.suspended event for node page")
	}
	return Pass, ""
}

// runToEnd executes body, which must be accepted and end with exactly one
// terminal event; what names the request in reasons.
func runToEnd(ctx context.Context, s *session, body, what string) (*stream, Status, string) {
	st, err := s.execute(ctx, body)
	if err != nil {
		v, reason := failf("POST /v1/executions: %v", err)
		return nil, v, reason
	}
	if st.status != http.StatusOK {
		v, reason := failf("%s answered %d: %s", what, st.status, clip(st.body))
		return nil, v, reason
	}
	v, reason := checkOneTerminal(st)
	return st, v, reason
}
