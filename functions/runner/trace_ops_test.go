//go:build !notracing

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/runnerd/lambda-runner/infra/telemetry"
)

// Tracing end to end: the real handler under the Lambda adapter, the SDK
// and its OTLP HTTP exporter, and an OTLP receiver in the test that
// decodes the export requests as a collector would. Helpers are prefixed
// trace.

// traceReceiver is an OTLP/HTTP traces endpoint (POST /v1/traces,
// application/x-protobuf) that keeps every span it is sent.
type traceReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func traceNewReceiver(t *testing.T) *traceReceiver {
	t.Helper()
	rcv := &traceReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("OTLP export %s %s (%s): %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					rcv.services = append(rcv.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				rcv.spans = append(rcv.spans, ss.Spans...)
			}
		}
		rcv.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func (rcv *traceReceiver) got() ([]*tracepb.Span, []string) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return append([]*tracepb.Span(nil), rcv.spans...), append([]string(nil), rcv.services...)
}

// traceAttrs flattens a span's attributes to strings.
func traceAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes {
		v := a.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[a.Key] = v.GetStringValue()
		default:
			m[a.Key] = fmt.Sprint(v.GetIntValue())
		}
	}
	return m
}

const (
	traceIncomingTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceIncomingSpanID  = "00f067aa0ba902b7"
	traceSecret          = "tr4ce-s3cret-v4lue"
)

// An execution with a map, a child workflow and an http call, invoked
// through a function URL event carrying a traceparent: every span is in
// the caller's trace, the tree follows the workflow, the http server sees
// the http node's span as its parent, the spans are exported before the
// stream ends, and no value reaches them.
func TestOpsTraceExecutionOverOTLP(t *testing.T) {
	rcv := traceNewReceiver(t)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")

	var seen struct {
		sync.Mutex
		traceparent string
		query       string
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Lock()
		seen.traceparent, seen.query = r.Header.Get("Traceparent"), r.URL.RawQuery
		seen.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer upstream.Close()

	cfg := testConfig(t, map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "AWS_LAMBDA_FUNCTION_NAME": "runner-traced"})
	tr, err := newTracing(context.Background(), cfg)
	if err != nil || tr == nil {
		t.Fatalf("newTracing = %v, %v", tr, err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	logger := slog.New(slog.DiscardHandler)
	h, err := newHandler(context.Background(), cfg, staticSource(t, cfg), logger, io.Discard, tr)
	if err != nil {
		t.Fatal(err)
	}
	inv := newInvoker(served(h, tr), cfg.LambdaMode, logger, tr.Flush)

	body := `{"version":1,"input":{"secret":"` + traceSecret + `"},
		"workflow":{"nodes":[
			{"id":"each","type":"map","with":{"items":[1,2],"nodes":[{"id":"item","type":"set","with":{"value":"${{ input.secret }}"}}]}},
			{"id":"child","type":"workflow","needs":["each"],"with":{"workflow":"kid","input":{"v":"${{ input.secret }}"}}},
			{"id":"fetch","type":"http","needs":["child"],"with":{"url":"` + upstream.URL + `/x","query":{"key":"${{ input.secret }}"}}}],
			"output":"${{ nodes.fetch.output.status }}"},
		"runtime":{"workflows":[{"id":"kid","nodes":[{"id":"leaf","type":"set","with":{"value":"${{ input.v }}"}}],"output":"${{ nodes.leaf.output }}"}],
			"http":{"policy":{"allowPrivateNetwork":true}}}}`
	ev := functionURLEvent("POST", "/v1/executions", testToken, body)
	ev["headers"].(map[string]any)["traceparent"] = "00-" + traceIncomingTraceID + "-" + traceIncomingSpanID + "-01"
	ctx, _ := invocationCtx(t, "req-traced")
	resp, err := inv.invoke(ctx, mustJSON(t, ev))
	if err != nil {
		t.Fatal(err)
	}
	reply := readReply(t, kindStream, resp)
	if !strings.Contains(reply.body, `"type":"result"`) {
		t.Fatalf("execution did not complete:\n%s", reply.body)
	}

	// No waiting: the invocation's spans were exported before its stream
	// ended.
	spans, services := rcv.got()
	byName := map[string][]*tracepb.Span{}
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		byID[fmt.Sprintf("%x", s.SpanId)] = s
		if got := fmt.Sprintf("%x", s.TraceId); got != traceIncomingTraceID {
			t.Errorf("span %q in trace %s, want the caller's %s", s.Name, got, traceIncomingTraceID)
		}
		for k, v := range traceAttrs(s) {
			if strings.Contains(v, traceSecret) || strings.Contains(v, upstream.URL) {
				t.Errorf("span %q attribute %s holds a value: %q", s.Name, k, v)
			}
		}
	}
	for _, s := range services {
		if s != "runner-traced" {
			t.Errorf("service.name %q, want the function's name", s)
		}
	}
	want := map[string]int{"execution": 1, "node map": 1, "node set": 3, "node workflow": 1, "node http": 1}
	for name, n := range want {
		if len(byName[name]) != n {
			t.Fatalf("%d %q spans, want %d; got %d spans in all", len(byName[name]), name, n, len(spans))
		}
	}
	exec := byName["execution"][0]
	if got := fmt.Sprintf("%x", exec.ParentSpanId); got != traceIncomingSpanID {
		t.Errorf("execution span's parent %s, want the traceparent's %s", got, traceIncomingSpanID)
	}
	if a := traceAttrs(exec); a["runner.execution.status"] != "completed" || a["runner.execution.id"] == "" {
		t.Errorf("execution span attributes %v", a)
	}
	parentName := func(s *tracepb.Span) string {
		if p := byID[fmt.Sprintf("%x", s.ParentSpanId)]; p != nil {
			return traceAttrs(p)["runner.node.id"] + "|" + p.Name
		}
		return "?"
	}
	for _, s := range byName["node set"] {
		a := traceAttrs(s)
		wantParent := map[string]string{"each[0].item": "each|node map", "each[1].item": "each|node map", "child.leaf": "child|node workflow"}[a["runner.node.id"]]
		if got := parentName(s); got != wantParent {
			t.Errorf("set node %q under %q, want %q", a["runner.node.id"], got, wantParent)
		}
	}
	for _, name := range []string{"node map", "node workflow", "node http"} {
		if p := byName[name][0].ParentSpanId; fmt.Sprintf("%x", p) != fmt.Sprintf("%x", exec.SpanId) {
			t.Errorf("%q is not a child of the execution span", name)
		}
	}
	fetch := byName["node http"][0]
	if a := traceAttrs(fetch); a["runner.node.id"] != "fetch" || a["runner.node.type"] != "http" || a["runner.node.attempt"] != "1" || a["runner.node.status"] != "completed" {
		t.Errorf("http span attributes %v", a)
	}

	seen.Lock()
	defer seen.Unlock()
	wantHeader := fmt.Sprintf("00-%s-%x-01", traceIncomingTraceID, fetch.SpanId)
	if seen.traceparent != wantHeader {
		t.Errorf("the http server saw traceparent %q, want %q (the http node's span)", seen.traceparent, wantHeader)
	}
	if !strings.Contains(seen.query, traceSecret) {
		t.Errorf("the http node's query %q lost its value: the test checks nothing", seen.query)
	}
}

// A failed attempt's span carries its error code, and nothing else of the
// failure.
func TestOpsTraceFailedNode(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := telemetry.NewTracing(context.Background(), telemetry.TracingOptions{Exporter: exp, ServiceName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	cfg := testConfig(t, nil)
	h, err := newHandler(context.Background(), cfg, staticSource(t, cfg), slog.New(slog.DiscardHandler), io.Discard, tr)
	if err != nil {
		t.Fatal(err)
	}
	inv := newInvoker(served(h, tr), cfg.LambdaMode, slog.New(slog.DiscardHandler), tr.Flush)
	body := `{"version":1,"input":{"m":"` + traceSecret + `"},"workflow":{"nodes":[{"id":"boom","type":"fail","with":{"message":"${{ input.m }}"}}]}}`
	ctx, _ := invocationCtx(t, "req-failed")
	resp, err := inv.invoke(ctx, mustJSON(t, functionURLEvent("POST", "/v1/executions", testToken, body)))
	if err != nil {
		t.Fatal(err)
	}
	readReply(t, kindStream, resp)
	var fail, exec *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		switch spans[i].Name {
		case "node fail":
			fail = &spans[i]
		case "execution":
			exec = &spans[i]
		}
	}
	if fail == nil || exec == nil {
		t.Fatalf("spans %d, want an execution and a fail node span", len(spans))
	}
	if exec.Parent.IsValid() {
		t.Error("with no traceparent the execution span should be a root")
	}
	for _, s := range []*tracetest.SpanStub{fail, exec} {
		if s.Status.Description != "FAILED" {
			t.Errorf("%s status %+v, want FAILED", s.Name, s.Status)
		}
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), traceSecret) {
				t.Errorf("%s attribute %s holds the failure's message", s.Name, a.Key)
			}
		}
		if len(s.Events) != 0 {
			t.Errorf("%s has events %v: an error message would be a value", s.Name, s.Events)
		}
	}
}

// Toolsets and model providers share the endpoint client: with tracing on
// it adds the traceparent of the calling span.
func TestOpsTraceEndpointsPropagate(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Traceparent") }))
	defer srv.Close()
	svc, err := services(context.Background(), testConfig(t, nil), telemetry.Propagating)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "model call")
	defer span.End()
	for name, c := range map[string]*http.Client{"models": svc.Models.HTTPClient, "toolsets": svc.Toolsets.HTTPClient} {
		got = ""
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		if got == "" || got != carrier.Get("traceparent") {
			t.Errorf("%s client sent traceparent %q, want %q", name, got, carrier.Get("traceparent"))
		}
	}
}

// A Lambda bootstrap watches for SIGTERM only when it exports traces (the
// last spans are flushed then), and from its first invocation on, never
// during INIT: the first signal.Notify costs a cold start ≈0.45 ms.
func TestLambdaWatchesSignalsOnlyWhenTracing(t *testing.T) {
	calls := 0
	prev := watchSignals
	watchSignals = func() { calls++ }
	t.Cleanup(func() { watchSignals = prev })
	tr, err := telemetry.NewTracing(context.Background(), telemetry.TracingOptions{Exporter: tracetest.NewInMemoryExporter(), ServiceName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	for _, tt := range []struct {
		name  string
		tr    *telemetry.Tracing
		watch int
	}{{"without tracing", nil, 0}, {"with tracing", tr, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			cfg := testConfig(t, nil)
			h, err := newHandler(context.Background(), cfg, staticSource(t, cfg), slog.New(slog.DiscardHandler), io.Discard, tt.tr)
			if err != nil {
				t.Fatal(err)
			}
			inv := lambdaInvoker(served(h, tt.tr), h.Engine, cfg, slog.New(slog.DiscardHandler), tt.tr)
			if calls != 0 {
				t.Fatalf("watching signals before the first invocation")
			}
			for i := range 2 {
				ctx, _ := invocationCtx(t, fmt.Sprint("req-", i))
				resp, err := inv.invoke(ctx, mustJSON(t, functionURLEvent("GET", "/v1/capabilities", testToken, "")))
				if err != nil {
					t.Fatal(err)
				}
				readReply(t, kindStream, resp)
			}
			if calls != tt.watch {
				t.Errorf("watchSignals ran %d times over two invocations, want %d", calls, tt.watch)
			}
		})
	}
}
