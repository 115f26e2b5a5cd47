package eventlog

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
)

// TracerName names the instrumentation of Steward's spans.
const TracerName = "github.com/steward-run/steward"

// Tracer returns the tracer the log's readers record spans with: a no-op
// one unless the log was opened with a tracer provider (Config.Tracing).
func (l *Log) Tracer() trace.Tracer {
	if l.cfg.Tracing == nil {
		return tracing.Off().Tracer(TracerName)
	}
	return l.cfg.Tracing.Tracer(TracerName)
}

// reactionSpan continues the trace rec's event was written in, if any,
// with a span for consumer's reaction to it; the events the reaction
// appends carry that span's context on (Append). An event outside any trace
// starts none: a trace is one governed action, begun where it is proposed.
func (l *Log) reactionSpan(ctx context.Context, consumer string, rec *stewardv1.EventRecord) (context.Context, func(error)) {
	ev := rec.Event
	if !tracing.Traced(ev) {
		return ctx, func(error) {}
	}
	ctx, span := l.Tracer().Start(tracing.From(ctx, ev), consumer+" "+ev.Type,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(tracing.Plane.String(consumer), tracing.EventType.String(ev.Type), tracing.TaskID.String(ev.TaskId)))
	return ctx, func(err error) { tracing.Fail(span, err) }
}

// TracedReader returns r recording, for each traced event it applies, a
// span of reader's in the event's trace: when a view (the state plane's)
// took in a step of a governed action. Untraced events cost a field check.
func (l *Log) TracedReader(ctx context.Context, reader string, r Reader) Reader {
	if l.cfg.Tracing == nil {
		return r
	}
	return tracedReader{Reader: r, ctx: ctx, name: reader, tr: l.Tracer()}
}

type tracedReader struct {
	Reader
	ctx  context.Context
	name string
	tr   trace.Tracer
}

func (r tracedReader) Apply(rec *stewardv1.EventRecord) error {
	ev := rec.Event
	if !tracing.Traced(ev) {
		return r.Reader.Apply(rec)
	}
	_, span := r.tr.Start(tracing.From(r.ctx, ev), r.name+" "+ev.Type, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(tracing.Plane.String(r.name), tracing.EventType.String(ev.Type), tracing.TaskID.String(ev.TaskId)))
	err := r.Reader.Apply(rec)
	tracing.Fail(span, err)
	return err
}
