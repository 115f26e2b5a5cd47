package control

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// decisions keeps a task's model decisions and its context ledger on the
// record (docs/decisions.md): what a model decided, under which versions,
// from which context, so that an auditor can ask why and a restarted
// agent reuses a decision instead of paying the model again. Each is
// idempotent on the caller's own id, which names it in the fold.
type decisions struct {
	commands
	tasks *taskstore.Store
	now   func() time.Time
}

// RecordDecision records d, flagged where the context it cites had expired
// or may not go to its model's provider: a decision is recorded, never
// refused, for what it drew on, since it was made already. A task at its
// loop cap stops for input instead, as a proposal past the action cap
// does.
func (ds *decisions) RecordDecision(ctx context.Context, principal string, req *stewardv1.RecordDecisionRequest) (*stewardv1.Decision, bool, error) {
	if err := checkCommand(req.TaskId, "", ""); err != nil {
		return nil, false, err
	}
	d := proto.CloneOf(req.Decision)
	if err := checkDecision(d, ds.now()); err != nil {
		return nil, false, err
	}
	reported(d)
	if err := ds.notRevoked(ctx, req.TaskId, "record decisions"); err != nil {
		return nil, false, err
	}
	id := event.ID(req.TaskId, event.TypeDecisionRecorded, d.DecisionId)
	var stop error
	created := false
	t, err := ds.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		stop, created = nil, false
		if have := task.FindDecision(cur, d.DecisionId); have != nil {
			return nil, sameDecision(have, d)
		}
		if task.AtDecisionCap(cur) && task.Active(cur.Status) {
			stop = errs.New(errs.FailedPrecondition, "task %s recorded %d decisions, its loop cap (contract.limits.max_actions); it now waits for input: a person's ResumeTask lets it go on",
				req.TaskId, len(cur.Decisions))
			return ds.decisionCapStop(cur, principal)
		}
		if task.MilestoneAtCap(cur, d.MilestoneId) && task.Active(cur.Status) {
			capped := milestoneCapStop(ds, cur, d.MilestoneId, "decision", "", d.DecisionId) // milestone.go
			stop = capped.refusal
			return capped.event, capped.err
		}
		flagged := proto.CloneOf(d) // this attempt's: a retry flags it afresh
		flagged.Flags = task.DecisionFlags(cur, d, timestamppb.New(ds.now()))
		created = true
		return ds.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: ds.actor(principal), CorrelationID: d.DecisionId},
			&stewardv1.DecisionRecorded{Decision: flagged})
	})
	switch {
	case err != nil:
		return nil, false, err
	case stop != nil:
		return nil, false, stop
	}
	if len(t.Contract.GetFallbacks()) > 0 {
		// After the decision is on the log, so that it is there to cite
		// (fallback_model.go); a repeat of the request completes it.
		if err := ds.steerModel(ctx, req.TaskId, d.DecisionId); err != nil {
			return nil, false, err
		}
	}
	return task.FindDecision(t, d.DecisionId), created, nil
}

// decisionCapStop stops t for input at its loop cap, once per cap and
// head as capStop does for proposals.
func (ds *decisions) decisionCapStop(t *stewardv1.Task, principal string) (*stewardv1.Event, error) {
	taskID, limit := t.Contract.GetTaskId(), task.MaxActions(t)
	return ds.event(event.Meta{
		ID:     event.ID(taskID, event.TypeTaskNeedsInput, "decision-cap", strconv.Itoa(limit), strconv.FormatUint(t.LastSequence, 10)),
		TaskID: taskID,
		Actor:  ds.actor(stewardPrincipal),
	}, &stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ACTION_CAP,
		Reason: fmt.Sprintf("reached its cap of %d model decisions (contract.limits.max_actions): resume the task to let it decide more, or end it", limit)})
}

// AttachContext adds item to the task's context ledger.
func (ds *decisions) AttachContext(ctx context.Context, principal string, req *stewardv1.AttachContextRequest) (*stewardv1.ContextItem, bool, error) {
	if err := checkCommand(req.TaskId, "", ""); err != nil {
		return nil, false, err
	}
	item := proto.CloneOf(req.Item)
	if err := checkContextItem(item); err != nil {
		return nil, false, err
	}
	if err := ds.notRevoked(ctx, req.TaskId, "attach context"); err != nil {
		return nil, false, err
	}
	id := event.ID(req.TaskId, event.TypeContextAttached, item.ContextId)
	created := false
	t, err := ds.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		created = false
		if have := task.FindContext(cur, item.ContextId); have != nil {
			return nil, sameContext(have, item)
		}
		created = true
		return ds.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: ds.actor(principal), CorrelationID: item.ContextId},
			&stewardv1.ContextAttached{Item: item})
	})
	if err != nil {
		return nil, false, err
	}
	return task.FindContext(t, item.ContextId), created, nil
}

// reported marks what the agent says of d as reported: RecordDecision
// observes nothing itself.
func reported(d *stewardv1.Decision) {
	d.Call.Provenance = stewardv1.Provenance_PROVENANCE_REPORTED
	if d.Versions != nil {
		d.Versions.Provenance = stewardv1.Provenance_PROVENANCE_REPORTED
	}
}

// sameDecision answers a repeat of decision id: nil for the same body,
// which is answered with the one recorded, else ALREADY_EXISTS.
func sameDecision(have, d *stewardv1.Decision) error {
	have = proto.CloneOf(have)
	have.Flags, have.RecordedBy, have.RecordedAt = nil, "", nil
	if proto.Equal(have, d) {
		return nil
	}
	return errs.New(errs.AlreadyExists, "decision_id %s already recorded a different decision", errs.Quote(d.DecisionId))
}

// sameContext is sameDecision for a context item.
func sameContext(have, item *stewardv1.ContextItem) error {
	have = proto.CloneOf(have)
	have.AttachedBy, have.AttachedAt, have.CitedBy = "", nil, nil
	if proto.Equal(have, item) {
		return nil
	}
	return errs.New(errs.AlreadyExists, "context_id %s already attached a different item", errs.Quote(item.ContextId))
}

func (s *taskService) RecordDecision(ctx context.Context, req *connect.Request[stewardv1.RecordDecisionRequest]) (*connect.Response[stewardv1.RecordDecisionResponse], error) {
	d, created, err := s.plane.decisions.RecordDecision(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RecordDecisionResponse{Decision: d, Created: created}), nil
}

func (s *taskService) AttachContext(ctx context.Context, req *connect.Request[stewardv1.AttachContextRequest]) (*connect.Response[stewardv1.AttachContextResponse], error) {
	item, created, err := s.plane.decisions.AttachContext(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.AttachContextResponse{Item: item, Created: created}), nil
}
