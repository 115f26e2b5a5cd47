package governance

import (
	"cmp"
	"context"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

type governanceService struct {
	stewardv1connect.UnimplementedGovernanceServiceHandler
	plane *Plane
}

func (s *governanceService) ListApprovals(ctx context.Context, req *connect.Request[stewardv1.ListApprovalsRequest]) (*connect.Response[stewardv1.ListApprovalsResponse], error) {
	if req.Msg.TaskId != "" && !eventlog.ValidTaskID(req.Msg.TaskId) {
		return nil, errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(req.Msg.TaskId))
	}
	size, err := rpc.PageSize(req.Msg.PageSize, MaxApprovalPage, MaxApprovalPage)
	if err != nil {
		return nil, err
	}
	if err := s.plane.approvals.Sync(ctx, s.plane.log); err != nil {
		return nil, err
	}
	after, err := rpc.DecodePageToken(approvalPages, req.Msg.PageToken, s.plane.approvals.Len())
	if err != nil {
		return nil, err
	}
	page, err := s.plane.approvalPage(ctx, rpc.Caller(ctx), req.Msg, after, size, rpc.PageWeigher(req.Header()))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(page), nil
}

func (s *governanceService) GetApproval(ctx context.Context, req *connect.Request[stewardv1.GetApprovalRequest]) (*connect.Response[stewardv1.GetApprovalResponse], error) {
	if req.Msg.ApprovalId == "" {
		return nil, errs.Field("approval_id", "is required")
	}
	ap, err := s.plane.approvals.Fresh(ctx, s.plane.log, req.Msg.ApprovalId)
	if err != nil {
		return nil, err
	}
	if mine, err := s.plane.shown(ctx, rpc.Caller(ctx), []*stewardv1.Approval{ap}); err != nil || len(mine) == 0 {
		return nil, cmp.Or(err, approvalNotFound(req.Msg.ApprovalId))
	}
	return connect.NewResponse(&stewardv1.GetApprovalResponse{Approval: ap}), nil
}

func (s *governanceService) DecideApproval(ctx context.Context, req *connect.Request[stewardv1.DecideApprovalRequest]) (*connect.Response[stewardv1.DecideApprovalResponse], error) {
	ap, err := s.plane.Decide(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.DecideApprovalResponse{Approval: ap}), nil
}

func (s *governanceService) RevokeCredential(ctx context.Context, req *connect.Request[stewardv1.RevokeCredentialRequest]) (*connect.Response[stewardv1.RevokeCredentialResponse], error) {
	c, err := s.plane.credentials.RevokeCredential(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RevokeCredentialResponse{Credential: c}), nil
}

func (s *governanceService) GetCredentialKey(context.Context, *connect.Request[stewardv1.GetCredentialKeyRequest]) (*connect.Response[stewardv1.GetCredentialKeyResponse], error) {
	k, err := s.plane.credentials.CredentialKey()
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(k), nil
}

func (s *governanceService) RenewCredential(ctx context.Context, req *connect.Request[stewardv1.RenewCredentialRequest]) (*connect.Response[stewardv1.RenewCredentialResponse], error) {
	c, err := s.plane.credentials.RenewCredential(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RenewCredentialResponse{Credential: c}), nil
}
