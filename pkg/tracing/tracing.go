// Package tracing follows one governed action across Steward's planes and
// the tool it calls with OpenTelemetry. The planes meet only on the log, so
// the W3C trace context travels on the event envelope (Event.trace_parent,
// Event.trace_state): Into writes the context of the span that appends an
// event, From continues it in whoever reads the event, and Header and Meta
// hand it to an HTTP or MCP tool.
//
// Tracing is off unless an OTLP endpoint is configured (NewProvider); off,
// the tracer is OpenTelemetry's no-op one, no span is recorded and events
// carry no trace context. All functions are safe for concurrent use.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Attribute keys Steward's spans carry.
const (
	TaskID      = attribute.Key("steward.task_id")
	ActionID    = attribute.Key("steward.action_id")
	EventType   = attribute.Key("steward.event_type")
	Plane       = attribute.Key("steward.plane")
	Tool        = attribute.Key("steward.tool")
	Decision    = attribute.Key("steward.decision")
	PolicyRev   = attribute.Key("steward.policy_revision")
	PlanVersion = attribute.Key("steward.plan_version")
	StepID      = attribute.Key("steward.step_id")
	ApprovalID  = attribute.Key("steward.approval_id")
)

// Off is the tracer provider of a Steward that does not trace.
func Off() trace.TracerProvider { return noop.NewTracerProvider() }

// w3c is the W3C trace context format (traceparent, tracestate): the one
// every OpenTelemetry SDK and most tool frameworks read.
var w3c = propagation.TraceContext{}

// Into writes the trace context of ctx's span onto ev, unless ev has one
// already (an event built once and retried keeps its first) or ctx has no
// span being traced.
func Into(ctx context.Context, ev *stewardv1.Event) {
	if ev.TraceParent != "" || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, eventCarrier{ev})
	if len(ev.TraceState) > MaxTraceState {
		ev.TraceState = "" // a caller's vendor state is not worth a kilobyte on every event of the action
	}
}

// MaxTraceState bounds the tracestate an event carries: W3C allows 32
// entries of 512 bytes, which a caller could send to ProposeAction and
// every event of its action would then repeat. A longer one is dropped;
// the traceparent alone keeps the trace.
const MaxTraceState = 256

// From returns ctx continuing the trace ev was written in, or ctx itself if
// ev carries none.
func From(ctx context.Context, ev *stewardv1.Event) context.Context {
	if ev.GetTraceParent() == "" {
		return ctx
	}
	return w3c.Extract(ctx, eventCarrier{ev})
}

// Traced reports whether ev was written in a trace: only then does a plane
// record spans for its reaction, so that work outside a governed action
// (heartbeats, timers, projections of untraced tasks) starts no traces.
func Traced(ev *stewardv1.Event) bool { return ev.GetTraceParent() != "" }

// Header adds ctx's trace context to h, for an HTTP tool (the W3C
// traceparent and tracestate headers).
func Header(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		w3c.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// Meta returns ctx's trace context as the keys an MCP request's _meta
// carries it under (traceparent, tracestate), or nil outside a trace.
func Meta(ctx context.Context) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := propagation.MapCarrier{}
	w3c.Inject(ctx, m)
	meta := make(map[string]any, len(m))
	for k, v := range m {
		meta[k] = v
	}
	return meta
}

// FromHeader returns ctx continuing the trace an incoming HTTP request
// names in its traceparent header, if any.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if h.Get("Traceparent") == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// eventCarrier reads and writes the W3C fields of an event envelope.
type eventCarrier struct{ ev *stewardv1.Event }

func (c eventCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.ev.TraceParent
	case "tracestate":
		return c.ev.TraceState
	}
	return ""
}

func (c eventCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.ev.TraceParent = value
	case "tracestate":
		c.ev.TraceState = value
	}
}

func (c eventCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Child starts a span under ctx's span, named name, if ctx is in a trace;
// outside one it starts nothing and returns ctx's own (non-recording)
// span, so that a step of a governed action is recorded in its action's
// trace and work outside any (a timer, a heartbeat) begins none. End the
// span returned either way.
func Child(ctx context.Context, tr trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tr.Start(ctx, name, opts...)
}

// Fail marks span as failed with err, if err is not nil, and ends it.
func Fail(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
