package execution

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/execution/adapter"
)

// MaxSettleReason bounds the reason a person gives for a settlement.
const MaxSettleReason = 4096

// Settle records a person's settlement of an unknown outcome: who, and
// why. Only an action whose outcome is unknown can be settled, and only
// once per attempt: a second settlement finds the first.
func (p *Plane) Settle(ctx context.Context, principal string, req *stewardv1.SettleActionRequest) (*stewardv1.Action, error) {
	switch {
	case req.TaskId == "":
		return nil, errs.Field("task_id", "is required")
	case !eventlog.ValidTaskID(req.TaskId):
		return nil, errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(req.TaskId))
	case req.ActionId == "":
		return nil, errs.Field("action_id", "is required")
	case req.Reason == "":
		return nil, errs.Field("reason", "is required: say how you know")
	case len(req.Reason) > MaxSettleReason:
		return nil, &errs.Error{Code: errs.TooLarge, Field: "reason", Message: "is longer than 4096 bytes"}
	case req.Result != nil && req.State != stewardv1.SettleState_SETTLE_STATE_SUCCEEDED:
		return nil, errs.Field("result", "is only for a succeeded settlement")
	}
	switch req.State {
	case stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, stewardv1.SettleState_SETTLE_STATE_FAILED, stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED:
	default:
		return nil, errs.Field("state", "must be SETTLE_STATE_SUCCEEDED, SETTLE_STATE_FAILED or SETTLE_STATE_NOT_ACCEPTED")
	}
	t, _, err := taskstore.Load(ctx, p.log, req.TaskId)
	if err != nil {
		return nil, err
	}
	a := task.FindAction(t, req.ActionId)
	if a == nil {
		return nil, errs.New(errs.NotFound, "task %s has no action %s", req.TaskId, req.ActionId)
	}
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
		return settledAs(a, principal, req.State)
	}
	s := &stewardv1.ActionSettled{ActionId: a.ActionId, State: req.State, Reason: req.Reason, SettledBy: principal}
	if req.State == stewardv1.SettleState_SETTLE_STATE_SUCCEEDED {
		body := []byte("null")
		if req.Result != nil {
			if body, err = protojson.Marshal(req.Result); err != nil {
				return nil, errs.Field("result", "%v", err)
			}
		}
		if len(body) > adapter.MaxResultBytes {
			return nil, &errs.Error{Code: errs.TooLarge, Field: "result", Message: "is larger than a tool result may be"}
		}
		if s.ResultRef, s.ResultHash, err = p.cfg.Results.Put(ctx, body); err != nil {
			return nil, err
		}
	}
	if err := p.settle(ctx, req.TaskId, a, cause{}, s); err != nil {
		return nil, err
	}
	t, _, err = taskstore.Load(ctx, p.log, req.TaskId)
	if err != nil {
		return nil, err
	}
	return settledAs(task.FindAction(t, req.ActionId), principal, req.State)
}

// settledAs returns a if it was settled as this request asks — a retry of
// the request finds its own settlement — and FailedPrecondition if it was
// settled otherwise, or is not settled and not unknown.
func settledAs(a *stewardv1.Action, principal string, state stewardv1.SettleState) (*stewardv1.Action, error) {
	want := map[stewardv1.SettleState]stewardv1.ActionStatus{
		stewardv1.SettleState_SETTLE_STATE_SUCCEEDED:    stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED,
		stewardv1.SettleState_SETTLE_STATE_FAILED:       stewardv1.ActionStatus_ACTION_STATUS_FAILED,
		stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED: stewardv1.ActionStatus_ACTION_STATUS_WAITING,
	}[state]
	switch {
	case a.SettledBy == principal && (a.Status == want || state == stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED && a.Redispatched):
		return a, nil
	case a.SettledBy != "":
		return nil, errs.New(errs.FailedPrecondition, "action %s was already settled by %s: %s", a.ActionId, a.SettledBy, a.GetOutcome().GetReason())
	}
	return nil, errs.New(errs.FailedPrecondition, "action %s is %s; only an unknown outcome is settled", a.ActionId, a.Status)
}

type actionService struct {
	stewardv1connect.UnimplementedActionServiceHandler
	plane *Plane
}

func (s *actionService) SettleAction(ctx context.Context, req *connect.Request[stewardv1.SettleActionRequest]) (*connect.Response[stewardv1.SettleActionResponse], error) {
	// Settling takes the operator role: the role table (pkg/access) says
	// so, and the RPC edge enforces it.
	a, err := s.plane.Settle(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.SettleActionResponse{Action: a}), nil
}
