package tracing_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
)

// TestOffRecordsNothing: without an endpoint the provider is the no-op
// one: a span it starts is not recorded and writes nothing onto an event;
// an endpoint that is not an http(s) URL is refused.
func TestOffRecordsNothing(t *testing.T) {
	tp, err := tracing.NewProvider(context.Background(), tracing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("t").Start(context.Background(), "x")
	ev := &stewardv1.Event{}
	tracing.Into(ctx, ev)
	if span.IsRecording() || ev.TraceParent != "" || tracing.Meta(ctx) != nil {
		t.Fatalf("off: recording %v, event carries %q, meta %v", span.IsRecording(), ev.TraceParent, tracing.Meta(ctx))
	}
	for _, bad := range []string{"collector:4318", "ftp://c:4318", "http://"} {
		if _, err := tracing.NewProvider(context.Background(), tracing.Config{Endpoint: bad}); err == nil {
			t.Errorf("endpoint %q was taken", bad)
		}
	}
}

// TestChildOnlyInsideATrace: Child records a span under a traced context
// and none outside one; From continues the trace an event carries, and an
// event that carries one keeps it when appended again (Into).
func TestChildOnlyInsideATrace(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)).Tracer("t")
	_, outside := tracing.Child(context.Background(), tr, "outside")
	outside.End()
	ctx, root := tr.Start(context.Background(), "root")
	ev := &stewardv1.Event{}
	tracing.Into(ctx, ev)
	root.End()
	_, child := tracing.Child(tracing.From(context.Background(), ev), tr, "child")
	child.End()
	got := spans.GetSpans()
	if len(got) != 2 || got[1].Name != "child" || got[1].Parent.SpanID() != root.SpanContext().SpanID() || got[1].SpanContext.TraceID() != root.SpanContext().TraceID() {
		t.Fatalf("spans %v; want root, then child under it", got.Snapshots())
	}
	first := ev.TraceParent
	tracing.Into(context.Background(), ev)
	octx, other := tr.Start(context.Background(), "other")
	tracing.Into(octx, ev)
	other.End()
	if ev.TraceParent != first {
		t.Errorf("an event's trace context changed from %s to %s", first, ev.TraceParent)
	}
}

// TestLongTraceStateIsDropped: a tracestate past MaxTraceState, which a
// caller could send, is not repeated on events; the traceparent is kept.
func TestLongTraceStateIsDropped(t *testing.T) {
	for _, tc := range []struct {
		state string
		kept  bool
	}{{"vendor=" + strings.Repeat("a", 200), true}, {"vendor=" + strings.Repeat("a", 250), false}} {
		h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "Tracestate": {tc.state}}
		ev := &stewardv1.Event{}
		tracing.Into(tracing.FromHeader(context.Background(), h), ev)
		if !strings.Contains(ev.TraceParent, "4bf92f3577b34da6a3ce929d0e0e4736") || (ev.TraceState != "") != tc.kept {
			t.Errorf("tracestate of %d bytes: event carries %q, %d bytes of state; want it kept: %v", len(tc.state), ev.TraceParent, len(ev.TraceState), tc.kept)
		}
	}
}
