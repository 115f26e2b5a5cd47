package execution

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
	"github.com/steward-run/steward/services/execution/adapter"
)

// callSpan begins the client span of a's tool call, in a's trace if it is
// traced (none otherwise); the adapters hand its context on to the tool (a
// traceparent header, or an MCP call's _meta). endCall records how the call
// went.
func callSpan(ctx context.Context, tr trace.Tracer, taskID string, a *stewardv1.Action, attempt uint32) (context.Context, trace.Span) {
	return tracing.Child(ctx, tr, "execution tool call", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		tracing.TaskID.String(taskID), tracing.ActionID.String(a.ActionId), tracing.Tool.String(a.Tool), attribute.Int64("steward.attempt", int64(attempt))))
}

func endCall(span trace.Span, res adapter.Result) {
	span.SetAttributes(attribute.String("steward.outcome", res.Status.String()))
	if res.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_UNSPECIFIED {
		span.SetAttributes(attribute.String("steward.failure_class", res.FailureClass.String()))
	}
	span.End()
}
