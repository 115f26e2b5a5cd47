package state

import (
	"context"
	"slices"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// WhoAmI answers with the caller as the edge identified it. It reads no
// view: a console asks it before anything else, to show only what its
// person may do, and the server refuses the rest anyway.
func (s *queryService) WhoAmI(ctx context.Context, _ *connect.Request[stewardv1.WhoAmIRequest]) (*connect.Response[stewardv1.WhoAmIResponse], error) {
	who := rpc.Caller(ctx)
	return connect.NewResponse(&stewardv1.WhoAmIResponse{
		Principal:     who.Principal,
		Roles:         slices.Clone(who.Roles),
		Tenant:        who.Tenant,
		Authenticated: who.Verified,
	}), nil
}
