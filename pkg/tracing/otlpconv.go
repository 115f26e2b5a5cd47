package tracing

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// otlpData converts a batch of spans into OTLP's TracesData, grouped by
// resource and then by instrumentation scope, as OTLP wants them. Its
// encoding is that of the collector's ExportTraceServiceRequest (both are
// `repeated ResourceSpans resource_spans = 1`), which is what is posted.
func otlpData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	data := &tracepb.TracesData{}
	byRes := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent()
		rs, ok := byRes[rk]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: otlpIter(res.Iter())}, SchemaUrl: res.SchemaURL()}
			byRes[rk] = rs
			data.ResourceSpans = append(data.ResourceSpans, rs)
		}
		sk := scopeKey{rk, s.InstrumentationScope()}
		ss, ok := byScope[sk]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: otlpScope(sk.scope), SchemaUrl: sk.scope.SchemaURL}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, otlpSpan(s))
	}
	return data
}

func otlpScope(s instrumentation.Scope) *commonpb.InstrumentationScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: otlpIter(s.Attributes.Iter())}
}

func otlpSpan(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	out := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   otlpKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime().UnixNano()),
		EndTimeUnixNano:        unixNano(s.EndTime().UnixNano()),
		Attributes:             otlpAttrs(s.Attributes()),
		DroppedAttributesCount: clamp32(s.DroppedAttributes()),
		DroppedEventsCount:     clamp32(s.DroppedEvents()),
		DroppedLinksCount:      clamp32(s.DroppedLinks()),
		Status:                 otlpStatus(s.Status()),
		Flags:                  otlpFlags(sc.TraceFlags(), parent),
	}
	if psid := parent.SpanID(); psid.IsValid() {
		out.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, &tracepb.Span_Event{
			Name: e.Name, TimeUnixNano: unixNano(e.Time.UnixNano()),
			Attributes: otlpAttrs(e.Attributes), DroppedAttributesCount: clamp32(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracepb.Span_Link{
			TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: otlpAttrs(l.Attributes), DroppedAttributesCount: clamp32(l.DroppedAttributeCount),
			Flags: otlpFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return out
}

// otlpFlags is the W3C trace flags in the low byte plus OTLP's bits saying
// whether the parent (or a link's span) is remote.
func otlpFlags(f trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(f) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

func otlpStatus(s sdktrace.Status) *tracepb.Status {
	code := tracepb.Status_STATUS_CODE_UNSET
	switch s.Code {
	case codes.Ok:
		code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		code = tracepb.Status_STATUS_CODE_ERROR
	}
	return &tracepb.Status{Code: code, Message: s.Description}
}

func otlpKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func otlpIter(it attribute.Iterator) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for it.Next() {
		kv := it.Attribute()
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)})
	}
	return out
}

func otlpAttrs(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)})
	}
	return out
}

// otlpValue converts an attribute value of every kind the SDK has; an empty
// one is an AnyValue with no value, as OTLP writes an empty attribute.
func otlpValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return otlpArray(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return otlpArray(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return otlpArray(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return otlpArray(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return otlpArray(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: otlpAttrs(v.AsMap())}}}
	case attribute.EMPTY:
		return &commonpb.AnyValue{}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "INVALID"}}
}

func otlpArray[T any](vs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = otlpValue(value(v))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}

// unixNano clamps a time before 1970 (a zero time.Time) to 0.
func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func clamp32(n int) uint32 { return uint32(min(max(0, int64(n)), math.MaxUint32)) }
