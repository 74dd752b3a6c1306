//go:build !notracing

package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// otlpExporter is the SDK's span exporter over OTLP/HTTP: it writes a
// batch of spans as the binary protobuf of an ExportTraceServiceRequest
// (opentelemetry-proto, collector/trace/v1 and trace/v1) and hands it to
// the client to send.
//
// It encodes the messages itself, with encoding/binary, instead of through
// the otlptrace exporter and the generated OTLP types: those link the
// protobuf runtime, whose package init (descriptors, the OTLP types'
// registration, detrand reading the executable) and pages cost every cold
// start ≈0.6 ms of INIT whether tracing is configured or not, and 1.5 MB of
// the bootstrap (bench/BASELINE.md, Round 7). TestOTLPEncodingAgrees holds
// the encoding to the exporter's, decoded by the generated types, on spans
// of every shape the SDK makes.
type otlpExporter struct {
	client *otlpHTTPClient
}

// ExportSpans sends spans in one request; a batch with no span sends none.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	body := appendExportRequest(nil, spans)
	if len(body) == 0 {
		return nil
	}
	if err := e.client.upload(ctx, body); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown closes the client's idle connections.
func (e *otlpExporter) Shutdown(ctx context.Context) error { return e.client.Stop(ctx) }

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// The OTLP values that differ from the SDK's.
const (
	statusOK    = 1
	statusError = 2
	// Span.flags: the low byte is the W3C trace flags; these two say
	// whether the parent's remoteness is known, and whether it is remote.
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// appendExportRequest appends the ExportTraceServiceRequest of spans:
// their resources (field 1, ResourceSpans), each with its instrumentation
// scopes (ScopeSpans) in the order the batch first names them.
func appendExportRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourceGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var groups []*resourceGroup
	byRes := map[attribute.Distinct]*resourceGroup{}
	byScope := map[scopeKey]*scopeGroup{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		rk := s.Resource().Equivalent()
		rg := byRes[rk]
		if rg == nil {
			rg = &resourceGroup{res: s.Resource()}
			byRes[rk] = rg
			groups = append(groups, rg)
		}
		sk := scopeKey{rk, s.InstrumentationScope()}
		sg := byScope[sk]
		if sg == nil {
			sg = &scopeGroup{scope: sk.scope}
			byScope[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	for _, rg := range groups {
		b = appendMessage(b, 1, func(b []byte) []byte {
			if rg.res != nil {
				b = appendMessage(b, 1, func(b []byte) []byte { // Resource
					it := rg.res.Iter()
					return appendIterator(b, 1, &it)
				})
			}
			for _, sg := range rg.scopes {
				b = appendMessage(b, 2, func(b []byte) []byte { // ScopeSpans
					if sg.scope != (instrumentation.Scope{}) {
						b = appendMessage(b, 1, func(b []byte) []byte { // InstrumentationScope
							b = appendString(b, 1, sg.scope.Name)
							b = appendString(b, 2, sg.scope.Version)
							it := sg.scope.Attributes.Iter()
							return appendIterator(b, 3, &it)
						})
					}
					for _, s := range sg.spans {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, 3, sg.scope.SchemaURL)
				})
			}
			return appendString(b, 3, rg.res.SchemaURL())
		})
	}
	return b
}

// appendSpan appends the fields of a Span message.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = appendVarint(b, 6, uint64(spanKind(s.SpanKind())))
	b = appendFixed64(b, 7, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, unixNano(s.EndTime().UnixNano()))
	b = appendKeyValues(b, 9, s.Attributes())
	b = appendVarint(b, 10, uint64(clampUint32(s.DroppedAttributes())))
	for _, ev := range s.Events() {
		b = appendMessage(b, 11, func(b []byte) []byte { // Span.Event
			b = appendFixed64(b, 1, unixNano(ev.Time.UnixNano()))
			b = appendString(b, 2, ev.Name)
			b = appendKeyValues(b, 3, ev.Attributes)
			return appendVarint(b, 4, uint64(clampUint32(ev.DroppedAttributeCount)))
		})
	}
	b = appendVarint(b, 12, uint64(clampUint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(b []byte) []byte { // Span.Link
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			b = appendString(b, 3, l.SpanContext.TraceState().String())
			b = appendKeyValues(b, 4, l.Attributes)
			b = appendVarint(b, 5, uint64(clampUint32(l.DroppedAttributeCount)))
			return appendFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendVarint(b, 14, uint64(clampUint32(s.DroppedLinks())))
	st := s.Status()
	// The status is always sent, as the exporter sends it.
	b = appendMessage(b, 15, func(b []byte) []byte {
		b = appendString(b, 2, st.Description)
		return appendVarint(b, 3, statusCode(st.Code))
	})
	return appendFixed32(b, 16, spanFlags(sc.TraceFlags(), parent))
}

// spanKind is the OTLP SpanKind of k: the same numbers, anything unknown
// unspecified (0).
func spanKind(k trace.SpanKind) trace.SpanKind {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return k
	}
	return 0
}

func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusOK
	case codes.Error:
		return statusError
	}
	return 0
}

// spanFlags are a span's or a link's flags: its trace flags, and whether
// parent (the span's parent, or the linked span) is remote.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// unixNano clamps a time before 1970 to 0, as the exporter does.
func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

// appendKeyValues appends each of kvs as a KeyValue message in field num.
func appendKeyValues(b []byte, num int, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendKeyValue(b, num, kv)
	}
	return b
}

func appendIterator(b []byte, num int, it *attribute.Iterator) []byte {
	for it.Next() {
		b = appendKeyValue(b, num, it.Attribute())
	}
	return b
}

func appendKeyValue(b []byte, num int, kv attribute.KeyValue) []byte {
	return appendMessage(b, num, func(b []byte) []byte {
		b = appendString(b, 1, string(kv.Key))
		return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, kv.Value) })
	})
}

// appendAnyValue appends the one field of an AnyValue that v sets. A
// oneof's field is sent even when it holds its type's zero value; an
// empty value sets none; a type this encoder does not know is the string
// "INVALID", as the exporter sends it.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.STRING:
		return appendStringAlways(b, 1, v.AsString())
	case attribute.BOOL:
		n := uint64(0)
		if v.AsBool() {
			n = 1
		}
		return appendVarintAlways(b, 2, n)
	case attribute.INT64:
		return appendVarintAlways(b, 3, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return appendFixed64Always(b, 4, math.Float64bits(v.AsFloat64()))
	case attribute.BYTESLICE:
		return appendStringAlways(b, 7, string(v.AsByteSlice()))
	case attribute.MAP:
		return appendMessage(b, 6, func(b []byte) []byte { // KeyValueList
			return appendKeyValues(b, 1, v.AsMap())
		})
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE, attribute.SLICE:
		return appendMessage(b, 5, func(b []byte) []byte { // ArrayValue
			for _, e := range sliceValues(v) {
				b = appendMessage(b, 1, func(b []byte) []byte { return appendAnyValue(b, e) })
			}
			return b
		})
	case attribute.EMPTY:
		return b
	}
	return appendStringAlways(b, 1, "INVALID")
}

// sliceValues are the elements of a slice-typed v.
func sliceValues(v attribute.Value) []attribute.Value {
	switch v.Type() {
	case attribute.BOOLSLICE:
		return valuesOf(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return valuesOf(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return valuesOf(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return valuesOf(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return v.AsSlice()
	}
	return nil
}

// valuesOf is each of xs as an attribute.Value.
func valuesOf[T any](xs []T, value func(T) attribute.Value) []attribute.Value {
	out := make([]attribute.Value, len(xs))
	for i, x := range xs {
		out[i] = value(x)
	}
	return out
}

// The field encoders. Without "Always", a field holding its zero value is
// left out, as proto3 sends it.

func appendTag(b []byte, num, wire int) []byte {
	return binary.AppendUvarint(b, uint64(num)<<3|uint64(wire))
}

func appendVarint(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendVarintAlways(b, num, v)
}

func appendVarintAlways(b []byte, num int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, num, wireVarint), v)
}

func appendFixed64(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendFixed64Always(b, num, v)
}

func appendFixed64Always(b []byte, num int, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, num, wireFixed64), v)
}

func appendFixed32(b []byte, num int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, num, wireFixed32), v)
}

func appendString(b []byte, num int, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringAlways(b, num, s)
}

func appendStringAlways(b []byte, num int, s string) []byte {
	b = binary.AppendUvarint(appendTag(b, num, wireBytes), uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, num int, p []byte) []byte {
	return appendString(b, num, string(p))
}

// appendMessage appends field num holding the message enc appends: the
// message is written in place and then moved up by the size of its
// length's varint.
func appendMessage(b []byte, num int, enc func([]byte) []byte) []byte {
	b = appendTag(b, num, wireBytes)
	at := len(b)
	b = enc(b)
	n := len(b) - at
	var lb [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lb[:], uint64(n))
	b = append(b, lb[:l]...)
	copy(b[at+l:], b[at:at+n])
	copy(b[at:], lb[:l])
	return b
}
