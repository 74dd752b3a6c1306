package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/urlfront"
)

const testToken = "test-token-7f3a"

// Events of every kind the runner is invoked with, as Lambda sends them.
func functionURLEvent(method, path, token, body string) map[string]any {
	headers := map[string]any{"content-type": "application/json", "x-amzn-request-id": "spoofed-by-client"}
	if token != "" {
		headers["authorization"] = "Bearer " + token
	}
	return map[string]any{
		"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
		"headers": headers,
		"requestContext": map[string]any{
			"accountId": "anonymous", "apiId": "abcdefghijklmnopqrstuvwxyz012345",
			"domainName":   "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws",
			"domainPrefix": "abcdefghijklmnopqrstuvwxyz012345",
			"http":         map[string]any{"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.10", "userAgent": "t"},
			"requestId":    "url-request-id", "routeKey": "$default", "stage": "$default",
			"time": "01/Jan/2025:00:00:00 +0000", "timeEpoch": 1735689600000,
		},
		"body": body, "isBase64Encoded": false,
	}
}

// httpAPIEvent is an API Gateway HTTP API (payload 2.0) event; domain ""
// is what `sam local start-api` sends.
func httpAPIEvent(method, path, token, body, domain string) map[string]any {
	ev := functionURLEvent(method, path, token, body)
	ev["routeKey"] = method + " " + path
	rc := ev["requestContext"].(map[string]any)
	rc["apiId"], rc["routeKey"] = "1234567890", method+" "+path
	if domain == "" {
		delete(rc, "domainName")
		delete(rc, "domainPrefix")
	} else {
		rc["domainName"], rc["domainPrefix"] = domain, "1234567890"
	}
	return ev
}

func restEvent(method, path, token, body string) map[string]any {
	return map[string]any{
		"resource": "/{proxy+}", "path": path, "httpMethod": method,
		"headers": map[string]any{"Authorization": "Bearer " + token, "Content-Type": "application/json", "X-Amzn-Request-Id": "spoofed-by-client"},
		"requestContext": map[string]any{
			"resourceId": "123456", "apiId": "1234567890", "resourcePath": "/{proxy+}", "httpMethod": method,
			"requestId": "rest-request-id", "accountId": "123456789012", "stage": "prod",
			"domainName": "1234567890.execute-api.eu-west-1.amazonaws.com", "path": "/prod" + path,
			"identity": map[string]any{"sourceIp": "203.0.113.10"},
		},
		"body": body, "isBase64Encoded": false,
	}
}

func albEvent(method, path, token, body string) map[string]any {
	return map[string]any{
		"requestContext": map[string]any{"elb": map[string]any{"targetGroupArn": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/runner/0123456789abcdef"}},
		"httpMethod":     method, "path": path,
		"headers": map[string]any{"authorization": "Bearer " + token, "content-type": "application/json", "host": "runner.internal", "x-amzn-request-id": "spoofed-by-client"},
		"body":    body, "isBase64Encoded": false,
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEventKind(t *testing.T) {
	url := mustJSON(t, functionURLEvent("GET", "/v1/capabilities", "t", ""))
	api := mustJSON(t, httpAPIEvent("GET", "/v1/capabilities", "t", "", "1234567890.execute-api.eu-west-1.amazonaws.com"))
	samLocal := mustJSON(t, httpAPIEvent("GET", "/v1/capabilities", "t", "", ""))
	// An HTTP API's $default route sends routeKey "$default" too: only the
	// domain tells it from a function URL.
	apiDefault := mustJSON(t, func() map[string]any {
		ev := httpAPIEvent("GET", "/v1/capabilities", "t", "", "runner.example.com")
		ev["routeKey"] = "$default"
		ev["requestContext"].(map[string]any)["routeKey"] = "$default"
		return ev
	}())
	rest := mustJSON(t, restEvent("GET", "/v1/capabilities", "t", ""))
	v1Payload := mustJSON(t, func() map[string]any {
		ev := restEvent("GET", "/v1/capabilities", "t", "")
		ev["version"] = "1.0"
		return ev
	}())
	alb := mustJSON(t, albEvent("GET", "/v1/capabilities", "t", ""))

	tests := []struct {
		name  string
		event []byte
		mode  string
		want  eventKind
	}{
		{"function URL, auto", url, config.LambdaModeAuto, kindStream},
		{"function URL, buffered (a BUFFERED URL)", url, config.LambdaModeBuffered, kindV2},
		{"function URL, stream", url, config.LambdaModeStream, kindStream},
		{"HTTP API, auto", api, config.LambdaModeAuto, kindV2},
		{"HTTP API $default route, auto", apiDefault, config.LambdaModeAuto, kindV2},
		{"HTTP API, stream", api, config.LambdaModeStream, kindStream},
		{"sam local start-api, auto", samLocal, config.LambdaModeAuto, kindV2},
		{"sam local start-api, buffered", samLocal, config.LambdaModeBuffered, kindV2},
		{"REST API, auto", rest, config.LambdaModeAuto, kindV1},
		{"REST API is never streamed", rest, config.LambdaModeStream, kindV1},
		{"HTTP API payload 1.0", v1Payload, config.LambdaModeAuto, kindV1},
		{"a distributed map's batch", []byte(`{"` + batch.EventField + `":{"v":1}}`), config.LambdaModeAuto, kindBatch},
		// A body is a string inside an HTTP event: it cannot make one a batch.
		{"a function URL event whose body looks like a batch", mustJSON(t, functionURLEvent("POST", "/v1/executions", "t", `{"`+batch.EventField+`":{"v":1}}`)), config.LambdaModeAuto, kindStream},
		{"ALB, auto", alb, config.LambdaModeAuto, kindALB},
		{"ALB is never streamed", alb, config.LambdaModeStream, kindALB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eventKindOf(tt.event, tt.mode)
			if err != nil || got != tt.want {
				t.Errorf("eventKindOf = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	for _, bad := range []string{`{}`, `[]`, `"x"`, `{"version":"2.0"}`, `{"Records":[{"eventSource":"aws:sqs"}]}`, `not json`} {
		if k, err := eventKindOf([]byte(bad), config.LambdaModeAuto); err == nil {
			t.Errorf("eventKindOf(%s) = %v, want an error", bad, k)
		}
	}
}

// seen is what the HTTP handler saw of one request.
type seen struct {
	method, path, body, auth, headerID string
	lambdaID                           string
	deadline                           time.Time
	hasDeadline                        bool
}

// recordingHandler answers 201 with a fixed JSON body after noting the
// request.
func recordingHandler(got *seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.body = r.Method, r.URL.Path, string(b)
		got.auth, got.headerID = r.Header.Get("Authorization"), r.Header.Get("X-Amzn-Request-Id")
		if lc, ok := lambdacontext.FromContext(r.Context()); ok {
			got.lambdaID = lc.AwsRequestID
		}
		got.deadline, got.hasDeadline = r.Context().Deadline()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "{\"n\":1}\n{\"n\":2}\n")
	})
}

func invocationCtx(t *testing.T, id string) (context.Context, time.Time) {
	deadline := time.Now().Add(42 * time.Second).Truncate(time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: id}), deadline
}

// httpReply is a response in any of the four forms, made comparable.
type httpReply struct {
	status  int
	headers map[string]string
	body    string
}

// readReply turns what invoke returned into an httpReply, checking that
// its form is the one the event kind calls for.
func readReply(t *testing.T, kind eventKind, resp any) httpReply {
	t.Helper()
	switch r := resp.(type) {
	case *events.LambdaFunctionURLStreamingResponse:
		if kind != kindStream {
			t.Fatalf("streamed a %v event", kind)
		}
		if ct := r.ContentType(); ct != "application/vnd.awslambda.http-integration-response" {
			t.Errorf("stream content type %q", ct)
		}
		raw, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		p, body := parseStreamed(t, raw)
		return httpReply{p.StatusCode, p.Headers, string(body)}
	case events.APIGatewayV2HTTPResponse:
		if kind != kindV2 {
			t.Fatalf("v2 response to a %v event", kind)
		}
		return httpReply{r.StatusCode, r.Headers, r.Body}
	case events.APIGatewayProxyResponse:
		if kind != kindV1 {
			t.Fatalf("v1 response to a %v event", kind)
		}
		return httpReply{r.StatusCode, r.Headers, r.Body}
	case events.ALBTargetGroupResponse:
		if kind != kindALB {
			t.Fatalf("ALB response to a %v event", kind)
		}
		return httpReply{r.StatusCode, r.Headers, r.Body}
	}
	t.Fatalf("invoke returned %T", resp)
	return httpReply{}
}

// prelude is the head of a streamed function URL response.
type prelude = urlfront.Prelude

// parseStreamed splits a streamed function URL response
// (application/vnd.awslambda.http-integration-response): the prelude
// JSON, eight NUL bytes, then the body.
func parseStreamed(t testing.TB, raw []byte) (prelude, []byte) {
	t.Helper()
	p, body, err := urlfront.Split(raw)
	if err != nil {
		t.Fatalf("%v: %q", err, raw)
	}
	return p, body
}

// Every event kind reaches the handler with the invocation's deadline and
// request id, and is answered in its own form.
func TestInvokeServesEveryEventKind(t *testing.T) {
	body := `{"version":1}`
	tests := []struct {
		name  string
		event map[string]any
		mode  string
		kind  eventKind
	}{
		{"function URL streams", functionURLEvent("POST", "/v1/executions", "tok", body), config.LambdaModeAuto, kindStream},
		{"BUFFERED function URL", functionURLEvent("POST", "/v1/executions", "tok", body), config.LambdaModeBuffered, kindV2},
		{"HTTP API", httpAPIEvent("POST", "/v1/executions", "tok", body, "x.execute-api.eu-west-1.amazonaws.com"), config.LambdaModeAuto, kindV2},
		{"sam local start-api", httpAPIEvent("POST", "/v1/executions", "tok", body, ""), config.LambdaModeBuffered, kindV2},
		{"REST API", restEvent("POST", "/v1/executions", "tok", body), config.LambdaModeAuto, kindV1},
		{"ALB", albEvent("POST", "/v1/executions", "tok", body), config.LambdaModeAuto, kindALB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got seen
			inv := newInvoker(recordingHandler(&got), tt.mode, slog.New(slog.DiscardHandler), nil)
			ctx, deadline := invocationCtx(t, "lambda-req-1")
			resp, err := inv.invoke(ctx, mustJSON(t, tt.event))
			if err != nil {
				t.Fatal(err)
			}
			reply := readReply(t, tt.kind, resp)
			if reply.status != http.StatusCreated || reply.body != "{\"n\":1}\n{\"n\":2}\n" ||
				reply.headers["Content-Type"] != "application/x-ndjson" {
				t.Errorf("reply %+v", reply)
			}
			if got.method != "POST" || got.path != "/v1/executions" || got.body != body || got.auth != "Bearer tok" {
				t.Errorf("handler saw %s %s body %q auth %q", got.method, got.path, got.body, got.auth)
			}
			if !got.hasDeadline || !got.deadline.Equal(deadline) {
				t.Errorf("request deadline %v (set %v), want the invocation's %v", got.deadline, got.hasDeadline, deadline)
			}
			if got.lambdaID != "lambda-req-1" || got.headerID != "lambda-req-1" {
				t.Errorf("request id: context %q, header %q; want lambda-req-1 in both", got.lambdaID, got.headerID)
			}
		})
	}
}

func TestInvokeRejectsOtherEvents(t *testing.T) {
	inv := newInvoker(http.NotFoundHandler(), config.LambdaModeAuto, slog.New(slog.DiscardHandler), nil)
	for _, ev := range []string{`{}`, `{"Records":[]}`, `"ping"`} {
		if resp, err := inv.invoke(context.Background(), json.RawMessage(ev)); err == nil {
			t.Errorf("invoke(%s) = %v, want an error", ev, resp)
		}
	}
}

// No panic escapes: before the response starts it becomes a 500, after it
// the stream just ends. The streaming adapter runs the handler on its own
// goroutine, where an escaped panic would end the process.
func TestInvokeRecoversPanics(t *testing.T) {
	early := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	late := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, "{\"type\":\"accepted\"}\n")
		panic("boom")
	})
	tests := []struct {
		name       string
		h          http.Handler
		event      map[string]any
		kind       eventKind
		wantStatus int
		wantBody   string
	}{
		{"stream, before the response", early, functionURLEvent("GET", "/v1/capabilities", "t", ""), kindStream, 500, `"code":"INTERNAL"`},
		{"stream, mid-response", late, functionURLEvent("GET", "/v1/capabilities", "t", ""), kindStream, 200, "{\"type\":\"accepted\"}\n"},
		{"buffered, before the response", early, httpAPIEvent("GET", "/v1/capabilities", "t", "", ""), kindV2, 500, `"code":"INTERNAL"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := newInvoker(tt.h, config.LambdaModeAuto, slog.New(slog.DiscardHandler), nil)
			ctx, _ := invocationCtx(t, "r")
			resp, err := inv.invoke(ctx, mustJSON(t, tt.event))
			if err != nil {
				t.Fatal(err)
			}
			reply := readReply(t, tt.kind, resp)
			if reply.status != tt.wantStatus || !strings.Contains(reply.body, tt.wantBody) {
				t.Errorf("reply %+v, want status %d with %q", reply, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus == 200 && reply.body != tt.wantBody {
				t.Errorf("body %q: something was written after the panic", reply.body)
			}
		})
	}
}

// testConfig loads the configuration from env over a minimal Lambda
// environment.
func testConfig(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	base := map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "RUNNER_TOKENS": testToken, "RUNNER_CODE_WORKER": inProcessWorker()}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load(func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The real handler behind the Lambda adapters: routes under a doubled
// slash (RunnerUrl keeps its trailing "/"), logs the Lambda request id
// with the execution id, and writes one metric line per execution.
func TestInvokeRealHandler(t *testing.T) {
	cfg := testConfig(t, nil)
	var logs, stdout bytes.Buffer
	logger := newLogger(cfg, false, &logs)
	h, err := newHandler(context.Background(), cfg, staticSource(t, cfg), logger, &stdout, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := newInvoker(h, cfg.LambdaMode, logger, nil)
	hello, err := os.ReadFile("../../events/hello-execution.json")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		event  map[string]any
		kind   eventKind
		status int
		ctype  string
	}{
		{"capabilities", functionURLEvent("GET", "/v1/capabilities", testToken, ""), kindStream, 200, "application/json"},
		{"capabilities under //", functionURLEvent("GET", "//v1/capabilities", testToken, ""), kindStream, 200, "application/json"},
		{"executions under //, buffered", httpAPIEvent("POST", "//v1/executions", testToken, string(hello), ""), kindV2, 200, "application/x-ndjson"},
		{"unknown route under //", functionURLEvent("GET", "//v2/capabilities", testToken, ""), kindStream, 404, "application/json"},
		{"no token", functionURLEvent("GET", "/v1/capabilities", "", ""), kindStream, 401, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, _ := invocationCtx(t, "req-"+strings.ReplaceAll(tt.name, " ", "-"))
			resp, err := inv.invoke(ctx, mustJSON(t, tt.event))
			if err != nil {
				t.Fatal(err)
			}
			reply := readReply(t, tt.kind, resp)
			if reply.status != tt.status || reply.headers["Content-Type"] != tt.ctype {
				t.Errorf("status %d, type %q; want %d, %q (body %s)", reply.status, reply.headers["Content-Type"], tt.status, tt.ctype, reply.body)
			}
		})
	}

	// The execution's log line and metric line both name the request and
	// the execution; each refusal (the 404 and the 401) has its own
	// Responses line, and nothing else reaches stdout.
	var finished, metric map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"execution finished"`) {
			json.Unmarshal([]byte(l), &finished)
		}
	}
	refusals := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line is not a metric line: %q", l)
		}
		switch {
		case m["Executions"] != nil && metric == nil:
			metric = m
		case m["Responses"] == 1.0 && m["StatusCode"] != nil:
			code, _ := m["StatusCode"].(string)
			id, _ := m["requestId"].(string)
			if _, dup := refusals[code]; dup {
				t.Errorf("two Responses lines for %s: %q", code, stdout.String())
			}
			refusals[code] = id
		default:
			t.Errorf("unexpected metric line %s", l)
		}
	}
	if metric == nil {
		t.Fatalf("no execution metric line in %q", stdout.String())
	}
	wantRefusals := map[string]string{"404": "req-unknown-route-under-//", "401": "req-no-token"}
	if !maps.Equal(refusals, wantRefusals) {
		t.Errorf("Responses lines by status code %v, want %v", refusals, wantRefusals)
	}
	wantID := "req-executions-under-//,-buffered"
	if finished["requestId"] != wantID || finished["executionId"] == nil {
		t.Errorf("execution log line %v, want requestId %s and an executionId", finished, wantID)
	}
	if metric["requestId"] != wantID || metric["executionId"] != finished["executionId"] || metric["Status"] != "completed" {
		t.Errorf("metric line %v, want the execution's ids and status", metric)
	}
	if strings.Contains(logs.String()+stdout.String(), testToken) {
		t.Error("the token reached the logs")
	}
}

func staticSource(t *testing.T, cfg config.Config) functions.TokenSource {
	t.Helper()
	src, err := tokenSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestLambdaModeConfig(t *testing.T) {
	for _, tt := range []struct {
		value, want string
		ok          bool
	}{
		{"", config.LambdaModeAuto, true},
		{"auto", config.LambdaModeAuto, true},
		{"Stream", config.LambdaModeStream, true},
		{" buffered ", config.LambdaModeBuffered, true},
		{"sideways", "", false},
	} {
		cfg, err := config.Load(func(k string) string {
			if k == "RUNNER_LAMBDA_MODE" {
				return tt.value
			}
			return ""
		})
		if tt.ok && (err != nil || cfg.LambdaMode != tt.want) {
			t.Errorf("RUNNER_LAMBDA_MODE=%q: %q, %v; want %q", tt.value, cfg.LambdaMode, err, tt.want)
		}
		if !tt.ok && (err == nil || !strings.Contains(err.Error(), "RUNNER_LAMBDA_MODE")) {
			t.Errorf("RUNNER_LAMBDA_MODE=%q: error %v, want one naming the variable", tt.value, err)
		}
	}
}

// TestInvokeServesBatches: a batch event is answered by the engine as a
// stream of NDJSON lines ending with the batch's end; an invalid batch
// ends the stream with an error, which Lambda reports as a function error.
func TestInvokeServesBatches(t *testing.T) {
	eng := engine.New(engine.Limits{})
	inv := newInvoker(http.NotFoundHandler(), config.LambdaModeAuto, slog.New(slog.DiscardHandler), nil)
	inv.batches = eng
	ev := `{"runnerFanOutBatch":{"v":1,"executionId":"x1","node":"each","start":3,"items":[1,2],"concurrency":2,"maxNodes":10,"deadlineMs":` +
		strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10) + `,"request":{"version":1,"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":[],"distribute":{"invocations":2},"nodes":[{"id":"v","type":"set","with":{"value":"${{ item * 10 + index }}"}}],"output":"${{ nodes.v.output }}"}}]}}}}`
	resp, err := inv.invoke(context.Background(), json.RawMessage(ev))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(io.Reader)
	if ct, ok := resp.(interface{ ContentType() string }); !ok || ct.ContentType() != "application/x-ndjson" {
		t.Errorf("content type %v", resp)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"nodeId":"each[4].v"`)) || !bytes.HasSuffix(out, []byte(`"outputs":[13,24],"usage":{"inputTokens":0,"outputTokens":0,"modelCalls":0,"toolCalls":0,"httpRequests":0},"nodes":2}`+"\n")) {
		t.Errorf("stream %s", out)
	}

	resp, err = inv.invoke(context.Background(), json.RawMessage(`{"runnerFanOutBatch":{"v":1,"request":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := io.ReadAll(resp.(io.Reader)); err == nil || len(out) > 0 {
		t.Errorf("an invalid batch streamed %q, %v", out, err)
	}

	inv.batches = nil
	if _, err := inv.invoke(context.Background(), json.RawMessage(ev)); err == nil {
		t.Error("a runner without an engine ran a batch")
	}
}
