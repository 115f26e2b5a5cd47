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

func endDecision(span trace.Span, snap *stewardv1.PolicySnapshot, err error) {
	if err == nil {
		span.SetAttributes(tracing.Decision.String(snap.GetDecision().String()), tracing.PolicyRev.String(snap.GetBundleRevision()))
	}
	tracing.Fail(span, err)
}
