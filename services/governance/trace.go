package governance

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
)

// decisionSpan begins the span of a policy decision about a, in a's trace
// if it is traced (none otherwise); endDecision records what was decided,
// under which bundle revision.
func decisionSpan(ctx context.Context, tr trace.Tracer, t *stewardv1.Task, a *stewardv1.Action) (context.Context, trace.Span) {
	return tracing.Child(ctx, tr, "governance policy decision", trace.WithAttributes(
		tracing.TaskID.String(t.GetContract().GetTaskId()), tracing.ActionID.String(a.GetActionId()), tracing.Tool.String(a.GetTool())))
}

// approvalTrace returns ctx continuing the trace approval id was opened
// in — its action's, so that a governed action that waits for a person is
// still one trace — in a span linked to the approver's call; the vote and
// the permit that follows it carry that trace. An approval opened outside
// a trace leaves ctx as it is.
func (x *Approvals) approvalTrace(ctx context.Context, tr trace.Tracer, id string) (context.Context, func(error)) {
	x.mu.RLock()
	tc, ok := x.traced[id]
	x.mu.RUnlock()
	if !ok {
		return ctx, func(error) {}
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(tracing.ApprovalID.String(id))}
	if call := trace.SpanContextFromContext(ctx); call.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: call}))
	}
	ctx, span := tr.Start(tracing.From(ctx, &stewardv1.Event{TraceParent: tc[0], TraceState: tc[1]}), "governance approval decision", opts...)
	return ctx, func(err error) { tracing.Fail(span, err) }
}

func endDecision(span trace.Span, snap *stewardv1.PolicySnapshot, err error) {
	if err == nil {
		span.SetAttributes(tracing.Decision.String(snap.GetDecision().String()), tracing.PolicyRev.String(snap.GetBundleRevision()))
	}
	tracing.Fail(span, err)
}
