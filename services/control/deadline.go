package control

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// ExtendDeadline moves a task's deadline later, with a reason, recorded as
// DeadlineExtended. Who may is checked by the fold (pkg/task): only the
// contract's accountable owner; anyone else is PermissionDenied and
// nothing is appended. The new deadline must be in the future and later
// than the current one; a task without a deadline has none to extend (it
// is not given one: that would shorten its life, and its credential
// already outlasts it), and an ended task is not extended. A sub-task's
// deadline stays within its parent's: extend the parent first. Extending
// a parent leaves its sub-tasks' deadlines as they are.
//
// The extension resumes nothing: a task suspended at its deadline waits
// for a ResumeTask, and its credential for a RenewCredential, each a
// decision of its own. With a request id it is idempotent (see claimRequestID).
func (p *Plane) ExtendDeadline(ctx context.Context, principal string, req *stewardv1.ExtendDeadlineRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	now := p.now()
	switch {
	case req.Reason == "":
		return nil, errs.Field("reason", "is required: say why the deadline moves")
	case req.Deadline == nil:
		return nil, errs.Field("deadline", "is required: the new deadline")
	}
	if err := checkTime("deadline", req.Deadline); err != nil {
		return nil, err
	}
	if !req.Deadline.AsTime().After(now) {
		return nil, errs.Field("deadline", "%s is not in the future", req.Deadline.AsTime().UTC().Format(time.RFC3339))
	}
	u, err := p.claimRequestID(ctx, principal, requestid.ExtendDeadline, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	t, history, err := p.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	if id != "" && history.Has(id) {
		return t, nil // a retry of a recorded extension
	}
	if err := p.withinParent(ctx, t, req.Deadline.AsTime()); err != nil {
		return nil, err
	}
	return p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(principal), CorrelationID: req.RequestId, Time: now},
			&stewardv1.DeadlineExtended{Previous: cur.Contract.GetDeadline(), Deadline: req.Deadline, Reason: req.Reason})
	})
}

// withinParent refuses to move a sub-task's deadline past its parent's: a
// delegation may not outlive the task it was handed from.
func (p *Plane) withinParent(ctx context.Context, t *stewardv1.Task, deadline time.Time) error {
	parentID := t.Contract.GetParentTaskId()
	if parentID == "" {
		return nil
	}
	parent, _, err := p.tasks.Load(ctx, parentID)
	if err != nil {
		return err
	}
	if pd := parent.Contract.GetDeadline(); pd != nil && deadline.After(pd.AsTime()) {
		return errs.Field("deadline", "%s is after the deadline of parent task %s (%s): a sub-task may not outlive its parent; extend the parent's first",
			deadline.UTC().Format(time.RFC3339), parentID, pd.AsTime().UTC().Format(time.RFC3339))
	}
	return nil
}

// stillPastDeadline refuses to resume a task suspended at its deadline
// while the deadline has still passed: it would only be suspended again,
// and its credential has expired with the deadline.
func stillPastDeadline(t *stewardv1.Task, now time.Time) error {
	if t.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED || t.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE || !task.PastDeadline(t, now) {
		return nil
	}
	return errs.New(errs.FailedPrecondition, "task %s is suspended because its deadline %s has passed: its accountable owner %s extends it with ExtendDeadline, then resumes it",
		t.Contract.GetTaskId(), t.Contract.GetDeadline().AsTime().UTC().Format(time.RFC3339), t.Contract.GetAccountableOwnerRef())
}

func (s *taskService) ExtendDeadline(ctx context.Context, req *connect.Request[stewardv1.ExtendDeadlineRequest]) (*connect.Response[stewardv1.ExtendDeadlineResponse], error) {
	t, err := s.plane.ExtendDeadline(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ExtendDeadlineResponse{Task: t}), nil
}
