package state

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// MaxFindingDescription bounds what an auditor writes about a finding.
const MaxFindingDescription = 4096

// RecordFinding records an auditor's finding on a task, such as a
// confirmed policy violation: it is what steward_confirmed_policy_violations
// counts. A finding comes after the fact, so a task in any status takes
// it, an ended one included. With callers authenticated it takes the
// auditor role.
//
// With a request id it is idempotent under the one rule for request ids
// (pkg/requestid): the finding is recorded under an event id derived from
// the caller and the request id, a repeat with the same body returns that
// finding with created false, and the id used for another body, command
// or task is AlreadyExists. Without one, every call records a finding.
func (p *Plane) RecordFinding(ctx context.Context, who rpc.Identity, req *stewardv1.RecordFindingRequest) (_ *stewardv1.Finding, created bool, err error) {
	if err := checkFinding(req); err != nil {
		return nil, false, err
	}
	t, _, err := p.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, false, err
	}
	if req.ActionId != "" && task.FindAction(t, req.ActionId) == nil {
		return nil, false, errs.Field("action_id", "task %s has no action %s", req.TaskId, errs.Quote(req.ActionId))
	}
	r, err := requestid.Begin(ctx, p.tasks, requestid.For(who.Tenant, who.Principal), requestid.RecordFinding, req.TaskId, req.RequestId, req, requestid.Logger(p.logger))
	if err != nil {
		return nil, false, err
	}
	// A finding refused before it was recorded leaves the id free; one
	// recorded keeps it.
	defer r.Settle(ctx, &err)
	id := r.EventID()
	if id == "" {
		id = event.RandomID()
	} else if f := task.FindFinding(t, id); f != nil {
		return f, false, nil
	}
	f := &stewardv1.Finding{FindingId: id, Kind: req.Kind, ActionId: req.ActionId, Description: req.Description}
	now := p.cfg.Now()
	created = true
	t, err = p.tasks.Update(ctx, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		created = task.FindFinding(t, id) == nil
		if !created {
			return nil, nil // this request's own retry came first
		}
		return event.New(event.Meta{
			ID: id, TaskID: req.TaskId, Actor: &stewardv1.Actor{Principal: who.Principal, Plane: PlaneName},
			CorrelationID: req.RequestId, Time: now,
		}, &stewardv1.FindingRecorded{Finding: f})
	})
	if err != nil {
		return nil, false, err
	}
	got := task.FindFinding(t, id)
	if got == nil {
		return nil, false, fmt.Errorf("finding %s is not on task %s after it was recorded", id, req.TaskId)
	}
	if created {
		p.logger.Info("finding recorded", "task", req.TaskId, "finding", id, "kind", req.Kind, "by", who.Principal)
	}
	return got, created, nil
}

// checkFinding checks what a finding request says on its own, before the
// task is read.
func checkFinding(req *stewardv1.RecordFindingRequest) error {
	if err := checkTaskID(req.TaskId); err != nil {
		return err
	}
	switch {
	case req.Kind == stewardv1.FindingKind_FINDING_KIND_UNSPECIFIED:
		return errs.Field("kind", "is required: say what was found (FINDING_KIND_POLICY_VIOLATION)")
	case req.Kind != stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION:
		return errs.Field("kind", "%d is not a known kind of finding", int32(req.Kind))
	case req.Description == "":
		return errs.Field("description", "is required: say what was found")
	case len(req.Description) > MaxFindingDescription:
		return &errs.Error{Code: errs.TooLarge, Field: "description", Message: fmt.Sprintf("is longer than %d bytes", MaxFindingDescription)}
	}
	return requestid.Check(req.RequestId)
}

func (s *auditService) RecordFinding(ctx context.Context, req *connect.Request[stewardv1.RecordFindingRequest]) (*connect.Response[stewardv1.RecordFindingResponse], error) {
	f, created, err := s.plane.RecordFinding(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RecordFindingResponse{Finding: f, Created: created}), nil
}
