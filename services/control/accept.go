package control

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
)

// AcceptTask records the acceptance owner accepting the task's produced
// result, in its current round; the reason is optional. Who may is checked
// by the fold (pkg/task): only the contract's acceptance owner, and under
// separation of duties not the requester; anyone else is PermissionDenied
// and nothing is appended. With a request id the call is idempotent.
func (ac *acceptance) AcceptTask(ctx context.Context, principal string, req *stewardv1.AcceptTaskRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	u, err := ac.claimRequestID(ctx, principal, requestid.AcceptTask, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	return ac.review(ctx, principal, req.TaskId, id, req.RequestId, req.Round, func(round uint32) eventPayload {
		return &stewardv1.TaskAccepted{Round: round, Reason: req.Reason}
	})
}

// ReturnTask records the acceptance owner returning the task's produced
// result for revision, saying what must change; the task goes back to
// running. The same people may as for AcceptTask.
func (ac *acceptance) ReturnTask(ctx context.Context, principal string, req *stewardv1.ReturnTaskRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, err
	}
	if len(req.Reasons) == 0 {
		return nil, errs.Field("reasons", "is required: say what must change")
	}
	if err := checkList("reasons", len(req.Reasons)); err != nil {
		return nil, err
	}
	for i, r := range req.Reasons {
		if err := checkText(fmt.Sprintf("reasons[%d]", i), r, MaxReasonLen, true); err != nil {
			return nil, err
		}
	}
	u, err := ac.claimRequestID(ctx, principal, requestid.ReturnTask, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	return ac.review(ctx, principal, req.TaskId, id, req.RequestId, req.Round, func(round uint32) eventPayload {
		return &stewardv1.TaskReturned{Round: round, Reasons: req.Reasons}
	})
}

// review records a decision on the task's current round, as folded when
// it is appended, under event id (see claimRequestID); with want set, only if that
// is round want, so that a decision never reaches a result its maker has
// not seen. A repeat of a decision made returns the task.
func (ac *acceptance) review(ctx context.Context, principal, taskID, id, requestID string, want uint32, decision func(round uint32) eventPayload) (*stewardv1.Task, error) {
	if id != "" && want != 0 {
		// A repeat of a decision made is answered as it was, whatever
		// round the task has reached since.
		if _, history, err := ac.tasks.Load(ctx, taskID); err == nil && history.Has(id) {
			want = 0
		}
	}
	return ac.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if cur := uint32(len(t.Acceptance)); want != 0 && want != cur {
			return nil, errs.New(errs.FailedPrecondition, "task %s is in acceptance round %d, not %d: look at the result produced since", taskID, cur, want)
		}
		return ac.event(event.Meta{ID: id, TaskID: taskID, Actor: ac.actor(principal), CorrelationID: requestID},
			decision(uint32(len(t.Acceptance))))
	})
}

func (s *taskService) AcceptTask(ctx context.Context, req *connect.Request[stewardv1.AcceptTaskRequest]) (*connect.Response[stewardv1.AcceptTaskResponse], error) {
	t, err := s.plane.acceptance.AcceptTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.AcceptTaskResponse{Task: t}), nil
}

func (s *taskService) ReturnTask(ctx context.Context, req *connect.Request[stewardv1.ReturnTaskRequest]) (*connect.Response[stewardv1.ReturnTaskResponse], error) {
	t, err := s.plane.acceptance.ReturnTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ReturnTaskResponse{Task: t}), nil
}
