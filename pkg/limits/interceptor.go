package limits

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
)

// NewInterceptor returns a Connect interceptor that runs Check on every
// request a handler receives, unary or streamed, before the handler sees
// it. It belongs inside the interceptor that translates domain errors, so
// that a refusal reaches the client as resource_exhausted naming the field.
func NewInterceptor() connect.Interceptor { return interceptor{} }

type interceptor struct{}

func (interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !req.Spec().IsClient {
			if err := checkAny(req.Any()); err != nil {
				return nil, err
			}
		}
		return next(ctx, req)
	}
}

func (interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return next(ctx, checkedConn{conn})
	}
}

// checkedConn checks each message a streaming handler receives.
type checkedConn struct{ connect.StreamingHandlerConn }

func (c checkedConn) Receive(m any) error {
	if err := c.StreamingHandlerConn.Receive(m); err != nil {
		return err
	}
	return checkAny(m)
}

func checkAny(m any) error {
	if msg, ok := m.(proto.Message); ok {
		return Check(msg.ProtoReflect())
	}
	return nil
}
