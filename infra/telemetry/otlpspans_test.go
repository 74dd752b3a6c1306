//go:build !notracing

package telemetry

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpCapture is an otlptrace.Client that keeps what the library's
// exporter hands it.
type otlpCapture struct{ rss []*tracepb.ResourceSpans }

func (*otlpCapture) Start(context.Context) error { return nil }
func (*otlpCapture) Stop(context.Context) error  { return nil }
func (c *otlpCapture) UploadTraces(_ context.Context, rss []*tracepb.ResourceSpans) error {
	c.rss = append(c.rss, rss...)
	return nil
}

// TestOTLPEncodingAgrees: the request appendExportRequest writes, decoded
// with the generated OTLP types, is the one the otlptrace exporter builds
// from the same spans, for spans of every shape: each attribute type
// (nested slices and maps, empty values, zero values a oneof must still
// send), events, links, statuses, remote and local parents, dropped
// counts, times before 1970, several resources and scopes, a nil
// resource and the zero scope. One difference is intended: a link's trace
// state, which the exporter leaves out and the specification carries.
func TestOTLPEncodingAgrees(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, err := trace.ParseTraceState("vendor=a,other=b")
	if err != nil {
		t.Fatal(err)
	}
	sc := func(sid byte, remote bool, flags trace.TraceFlags) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid}, TraceFlags: flags, Remote: remote})
	}
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "runner"), attribute.Int("n", 0))
	other := resource.NewSchemaless(attribute.Bool("other", true))
	scope := instrumentation.Scope{Name: "github.com/runnerd/lambda-runner", Version: "v1",
		SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.String("k", "v"))}
	start := time.Unix(1_700_000_000, 123_456_789)
	every := []attribute.KeyValue{
		attribute.String("s", "text"), attribute.String("empty", ""),
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Int64("max", math.MaxInt64),
		attribute.Float64("x", 1.5), attribute.Float64("fzero", 0), attribute.Float64("nan", math.NaN()),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{0, 1, -1}),
		attribute.Float64Slice("fs", []float64{0, 2.25}), attribute.StringSlice("ss", []string{"", "a"}),
		attribute.StringSlice("none", nil),
		{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1, 255})},
		{Key: "nobytes", Value: attribute.ByteSliceValue(nil)},
		{Key: "slice", Value: attribute.SliceValue(attribute.StringValue("a"), attribute.Int64Value(0),
			attribute.SliceValue(attribute.BoolValue(false)), attribute.Value{})},
		{Key: "map", Value: attribute.MapValue(attribute.String("a", "b"),
			attribute.KeyValue{Key: "inner", Value: attribute.MapValue(attribute.Int("z", 0))})},
		{Key: "emptyvalue", Value: attribute.Value{}},
		{Key: "", Value: attribute.StringValue("no key")},
	}
	stubs := tracetest.SpanStubs{
		{ // every field
			Name: "execution", SpanContext: sc(1, false, trace.FlagsSampled), Parent: sc(9, true, trace.FlagsSampled),
			SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(time.Second),
			Attributes: every, DroppedAttributes: 3,
			Events: []sdktrace.Event{
				{Name: "retry", Time: start.Add(time.Millisecond), Attributes: every[:4], DroppedAttributeCount: 1},
				{Name: "", Time: time.Unix(-5, 0)},
			},
			DroppedEvents: math.MaxInt32,
			Links: []sdktrace.Link{
				{SpanContext: sc(7, true, 0), Attributes: every[4:8], DroppedAttributeCount: 2},
				{SpanContext: sc(8, false, trace.FlagsSampled)},
			},
			DroppedLinks:         1,
			Status:               sdktrace.Status{Code: codes.Error, Description: "boom"},
			Resource:             res,
			InstrumentationScope: scope,
		},
		{ // a local parent, trace state, another kind, status ok
			Name: "node", SpanContext: sc(2, false, 0).WithTraceState(ts), Parent: sc(1, false, trace.FlagsSampled),
			SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(2 * time.Millisecond),
			Status: sdktrace.Status{Code: codes.Ok}, Resource: res, InstrumentationScope: scope,
		},
		{ // no parent, unset status, the zero scope, times before 1970
			Name: "root", SpanContext: sc(3, false, trace.FlagsSampled), SpanKind: trace.SpanKindInternal,
			StartTime: time.Unix(-1, 0), Resource: res,
		},
		{ // another scope of the same resource, a kind the SDK does not know
			Name: "other scope", SpanContext: sc(4, false, 0), SpanKind: trace.SpanKind(42),
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: "other"},
		},
		{Name: "other resource", SpanContext: sc(5, false, 0), SpanKind: trace.SpanKindProducer, Resource: other},
		{Name: "no resource", SpanContext: sc(6, false, 0), SpanKind: trace.SpanKindConsumer},
		{Name: "", SpanContext: trace.SpanContext{}}, // invalid ids, nothing set
	}
	spans := stubs.Snapshots()

	var lib otlpCapture
	exp, err := otlptrace.New(context.Background(), &lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	want := &collectortrace.ExportTraceServiceRequest{ResourceSpans: lib.rss}

	var got collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(appendExportRequest(nil, spans), &got); err != nil {
		t.Fatalf("the encoding does not decode: %v", err)
	}
	// The intended difference: the exporter drops a link's trace state
	// (none of these links has one; TestOTLPLinkTraceState).
	for _, rs := range got.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				for _, l := range s.Links {
					l.TraceState = ""
				}
			}
		}
	}
	// The exporter orders resources by a map's iteration.
	sortResources(want.ResourceSpans)
	sortResources(got.ResourceSpans)
	if !proto.Equal(want, &got) {
		t.Fatalf("encodings differ:\nexporter:\n%s\nours:\n%s", prototext.Format(want), prototext.Format(&got))
	}
	if len(got.ResourceSpans) != 3 {
		t.Errorf("%d resources, want 3 (the test's shapes are not all there)", len(got.ResourceSpans))
	}

	// An empty batch sends nothing, as the exporter sends nothing.
	if b := appendExportRequest(nil, nil); len(b) != 0 {
		t.Errorf("empty batch: %d bytes", len(b))
	}
	if b := appendExportRequest(nil, []sdktrace.ReadOnlySpan{nil}); len(b) != 0 {
		t.Errorf("batch of a nil span: %d bytes", len(b))
	}
}

// TestOTLPLinkTraceState: a link carries the linked span's trace state
// (opentelemetry-proto Span.Link.trace_state, field 3).
func TestOTLPLinkTraceState(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=a")
	if err != nil {
		t.Fatal(err)
	}
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceState: ts})
	spans := tracetest.SpanStubs{{Name: "s", Links: []sdktrace.Link{{SpanContext: linked}}}}.Snapshots()
	var got collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(appendExportRequest(nil, spans), &got); err != nil {
		t.Fatal(err)
	}
	if s := got.ResourceSpans[0].ScopeSpans[0].Spans[0].Links[0].TraceState; s != "vendor=a" {
		t.Errorf("link trace state %q, want vendor=a", s)
	}
}

// TestOTLPMessageLengths: messages whose length takes one, two and three
// bytes of varint, so the in-place move of appendMessage is exercised at
// each size.
func TestOTLPMessageLengths(t *testing.T) {
	for _, n := range []int{0, 1, 100, 127, 128, 300, 16383, 16384, 70000} {
		spans := tracetest.SpanStubs{{Name: strings.Repeat("n", n), Attributes: []attribute.KeyValue{attribute.String("a", strings.Repeat("v", n))}}}.Snapshots()
		var got collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(appendExportRequest(nil, spans), &got); err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		s := got.ResourceSpans[0].ScopeSpans[0].Spans[0]
		if len(s.Name) != n || len(s.Attributes[0].Value.GetStringValue()) != n {
			t.Errorf("%d: name %d, attribute %d bytes", n, len(s.Name), len(s.Attributes[0].Value.GetStringValue()))
		}
	}
}

func sortResources(rss []*tracepb.ResourceSpans) {
	key := func(rs *tracepb.ResourceSpans) string {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(rs.Resource)
		return string(b) + "\x00" + rs.SchemaUrl + "\x00" + boolString(rs.Resource == nil)
	}
	slices.SortFunc(rss, func(a, b *tracepb.ResourceSpans) int { return strings.Compare(key(a), key(b)) })
}

func boolString(b bool) string {
	if b {
		return "nil"
	}
	return ""
}

// batchOfNodes is a full batch (the batch processor's default, 512) of
// spans shaped like the engine's: one resource, a parent, three
// attributes.
func batchOfNodes() []sdktrace.ReadOnlySpan {
	res := resource.NewSchemaless(attribute.String("service.name", "runner"), attribute.String("service.version", "v1"))
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{9}})
	now := time.Now()
	stubs := make(tracetest.SpanStubs, 512)
	for i := range stubs {
		stubs[i] = tracetest.SpanStub{
			Name: "node", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{byte(i), byte(i >> 8), 1}}),
			Parent: parent, StartTime: now, EndTime: now.Add(time.Millisecond), Resource: res,
			Attributes: []attribute.KeyValue{attribute.String("runner.node.id", "n1"), attribute.String("runner.node.type", "set"), attribute.Int("runner.attempt", 1)},
		}
	}
	return stubs.Snapshots()
}

// BenchmarkOTLPEncode: a batch's request body, by appendExportRequest and,
// for comparison, by the otlptrace exporter and proto (as the runner sent
// it before round 7). Under Lambda the export runs before an invocation
// ends (Tracing.Flush).
func BenchmarkOTLPEncode(b *testing.B) {
	spans := batchOfNodes()
	b.Run("runner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = appendExportRequest(nil, spans)
		}
	})
	b.Run("otlptrace", func(b *testing.B) {
		exp, err := otlptrace.New(context.Background(), otlpMarshal{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := exp.ExportSpans(context.Background(), spans); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// otlpMarshal is an otlptrace.Client that encodes the request as the
// runner's client did before round 7, and sends nothing.
type otlpMarshal struct{}

func (otlpMarshal) Start(context.Context) error { return nil }
func (otlpMarshal) Stop(context.Context) error  { return nil }
func (otlpMarshal) UploadTraces(_ context.Context, rss []*tracepb.ResourceSpans) error {
	var body []byte
	opts := proto.MarshalOptions{UseCachedSize: true}
	for _, rs := range rss {
		body = protowire.AppendTag(body, 1, protowire.BytesType)
		body = protowire.AppendVarint(body, uint64(opts.Size(rs)))
		var err error
		if body, err = opts.MarshalAppend(body, rs); err != nil {
			return err
		}
	}
	return nil
}
