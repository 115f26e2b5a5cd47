package tracing

import (
	"context"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// NewInterceptor returns a Connect interceptor that records a server span
// for every unary call — continuing the caller's trace when its request
// names one in a traceparent header — with the task and action it is about
// as attributes. A ProposeAction's span is where a governed action's trace
// begins: the events the call appends carry it to the other planes.
// Streams (watches, replays) are left alone: they are reads that may last
// for hours, not steps of an action.
func NewInterceptor(tr trace.Tracer) connect.Interceptor { return interceptor{tr} }

type interceptor struct{ tr trace.Tracer }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		ctx, span := i.tr.Start(FromHeader(ctx, req.Header()), req.Spec().Procedure, trace.WithSpanKind(trace.SpanKindServer))
		if r, ok := req.Any().(interface{ GetTaskId() string }); ok && r.GetTaskId() != "" {
			span.SetAttributes(TaskID.String(r.GetTaskId()))
		}
		res, err := next(ctx, req)
		if err == nil {
			if r, ok := res.Any().(interface{ GetAction() *stewardv1.Action }); ok && r.GetAction().GetActionId() != "" {
				span.SetAttributes(ActionID.String(r.GetAction().GetActionId()))
			}
		}
		Fail(span, err)
		return res, err
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
