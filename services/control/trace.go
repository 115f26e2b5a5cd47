package control

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
	"github.com/steward-run/steward/services/control/plandriver"
)

// planStepSpan begins the trace of the action a plan's step proposes: a
// trace per governed action, so a new root, linked to the span of what
// moved the driver (the plan's submission, the step before's outcome). end
// records the action proposed, or why none was.
func planStepSpan(ctx context.Context, tr trace.Tracer, t *stewardv1.Task, c plandriver.Call) (context.Context, func(string, error)) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		tracing.TaskID.String(c.TaskID), tracing.PlanVersion.Int64(int64(t.GetPlan().GetVersion())), tracing.StepID.String(c.PlanStep), tracing.Tool.String(c.Tool))}
	if cause := trace.SpanContextFromContext(ctx); cause.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: cause}))
	}
	ctx, span := tr.Start(ctx, "control plan step", opts...)
	return ctx, func(actionID string, err error) {
		if actionID != "" {
			span.SetAttributes(tracing.ActionID.String(actionID))
		}
		tracing.Fail(span, err)
	}
}
