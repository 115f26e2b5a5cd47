package control

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Limits on a proposal.
const (
	MaxTargetLen = 1024
	MaxParams    = 256 << 10
)

// ProposeAction checks a proposed tool call against the task and the tool,
// canonicalises and stores the request, derives the action's identities,
// and records the proposal. With a proposal id it is idempotent: the same
// proposal again returns the same action with created false; the same
// proposal id with a different request is AlreadyExists.
func (p *Plane) ProposeAction(ctx context.Context, principal string, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, bool, error) {
	if p.tools == nil || p.requests == nil {
		return nil, false, errs.New(errs.FailedPrecondition, "this control plane does not take actions")
	}
	if err := validateProposal(req); err != nil {
		return nil, false, err
	}
	entry, err := p.tools.Lookup(ctx, p.log, req.Tool, req.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return nil, false, errs.Field("tool", "%s", err.Error())
	} else if err != nil {
		return nil, false, err
	}
	params, err := protojson.Marshal(req.Params)
	if err != nil {
		return nil, false, errs.Field("params", "%v", err)
	}
	if req.Params == nil {
		params = []byte("{}")
	}
	if len(params) > MaxParams {
		return nil, false, &errs.Error{Code: errs.TooLarge, Field: "params", Message: "are larger than 256 KiB"}
	}
	if err := entry.Schema.Validate(params); err != nil {
		var v *action.Violation
		if errors.As(err, &v) {
			return nil, false, errs.Field("params"+v.Path, "%s", v.Reason)
		}
		return nil, false, errs.Field("params", "%v", err)
	}
	tool := entry.Tool.Contract
	canonical, err := action.Canonical(action.Request{TaskID: req.TaskId, Tool: tool.Name, ToolVersion: tool.Version, Target: req.Target, Params: params})
	if err != nil {
		return nil, false, errs.Field("params", "%v", err)
	}
	requestHash := action.RequestHash(canonical)
	actionID := event.RandomID()
	if req.ProposalId != "" {
		actionID = action.ID(req.TaskId, req.ProposalId)
	} else {
		actionID = "act-" + actionID
	}
	a := &stewardv1.Action{
		ActionId:    actionID,
		ProposalId:  req.ProposalId,
		Tool:        tool.Name,
		ToolVersion: tool.Version,
		Target:      req.Target,
		EffectClass: tool.EffectClass,
		RequestHash: requestHash,
		ActionHash:  action.Hash(actionID, requestHash),
		OpKey:       action.OpKey(req.TaskId, actionID),
		ProposedBy:  principal,
		EditOf:      req.EditOf,
	}

	var existing *stewardv1.Action
	t, err := p.apply(ctx, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if existing = task.FindAction(t, actionID); existing != nil {
			return nil, nil // a repeat of the proposal: nothing to append
		}
		if !slices.Contains(t.Contract.AllowedTools, tool.Name) {
			return nil, errs.Field("tool", "%q is not among the tools task %s allows (%v)", tool.Name, req.TaskId, t.Contract.AllowedTools)
		}
		if req.EditOf != "" && task.FindAction(t, req.EditOf) == nil {
			return nil, errs.Field("edit_of", "task %s has no action %s", req.TaskId, req.EditOf)
		}
		if !task.Active(t.Status) {
			return nil, errs.New(errs.FailedPrecondition, "task %s is %s; only a running task takes new actions", req.TaskId, task.StatusName(t.Status))
		}
		// Store the request before the proposal names it: a proposal must
		// never point at a request that is not there.
		if a.RequestRef, _, err = p.requests.Put(ctx, canonical); err != nil {
			return nil, err
		}
		return event.New(event.Meta{
			ID:            event.ID(req.TaskId, event.TypeActionProposed, actionID),
			TaskID:        req.TaskId,
			Actor:         p.actor(principal),
			CorrelationID: req.ProposalId,
		}, &stewardv1.ActionProposed{Action: a})
	})
	if err != nil {
		return nil, false, err
	}
	if existing != nil {
		if existing.RequestHash != requestHash {
			return nil, false, errs.New(errs.AlreadyExists, "proposal_id %q already proposed a different request (action %s)", req.ProposalId, actionID)
		}
		return existing, false, nil
	}
	if req.EditOf != "" {
		if t, err = p.withdraw(ctx, principal, req.TaskId, req.EditOf, actionID); err != nil {
			return nil, false, err
		}
	}
	return task.FindAction(t, actionID), true, nil
}

// withdraw closes an edited action that has not been permitted yet, so
// that nobody approves the old version by mistake. An action already
// permitted or further along stays as it is.
func (p *Plane) withdraw(ctx context.Context, principal, taskID, original, replacement string) (*stewardv1.Task, error) {
	return p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		switch task.FindAction(t, original).GetStatus() {
		case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, stewardv1.ActionStatus_ACTION_STATUS_EVALUATED,
			stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL, stewardv1.ActionStatus_ACTION_STATUS_APPROVED:
			return event.New(event.Meta{
				ID:     event.ID(taskID, event.TypeActionWithdrawn, original, replacement),
				TaskID: taskID,
				Actor:  p.actor(principal),
			}, &stewardv1.ActionWithdrawn{ActionId: original, ReplacedBy: replacement})
		}
		return nil, nil
	})
}

func validateProposal(req *stewardv1.ProposeActionRequest) error {
	switch {
	case req.TaskId == "":
		return errs.Field("task_id", "is required")
	case !eventlog.ValidTaskID(req.TaskId):
		return errs.Field("task_id", "%q is not a task id", req.TaskId)
	case req.Tool == "":
		return errs.Field("tool", "is required")
	}
	for _, err := range []error{
		checkText("proposal_id", req.ProposalId, MaxRequestID, false),
		checkText("tool", req.Tool, MaxRefLen, true),
		checkText("tool_version", req.ToolVersion, MaxRefLen, false),
		checkText("target", req.Target, MaxTargetLen, false),
		checkText("edit_of", req.EditOf, MaxRefLen, false),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
