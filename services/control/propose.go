package control

import (
	"context"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/task"
)

// Limits on a proposal.
const (
	MaxTargetLen = 1024
	MaxParams    = 256 << 10
)

// ProposeAction checks a proposed tool call against the task and the tool,
// canonicalises and stores the request, derives the action's identities,
// and records the proposal. The action runs under the tool's retry policy,
// narrowed by the request's (see narrowRetry). With a proposal id it is
// idempotent: the same proposal again returns the same action with created
// false; the proposal id used for anything else is AlreadyExists (see
// claim), and so is another caller's proposal id that names an action
// already proposed on the task with a different request or retry policy.
func (p *Plane) ProposeAction(ctx context.Context, principal string, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, bool, error) {
	if p.tools == nil || p.requests == nil {
		return nil, false, errs.New(errs.FailedPrecondition, "this control plane does not take actions")
	}
	if err := validateProposal(req); err != nil {
		return nil, false, err
	}
	params := []byte("{}")
	if req.Params != nil {
		var err error
		if params, err = protojson.Marshal(req.Params); err != nil {
			return nil, false, errs.Field("params", "%v", err)
		}
	}
	d, err := p.prepare(ctx, proposal{
		taskID: req.TaskId, proposalID: req.ProposalId,
		tool: req.Tool, toolVersion: req.ToolVersion, target: req.Target,
		params: params, retry: req.RetryPolicy, editOf: req.EditOf, principal: principal,
	})
	if err != nil {
		return nil, false, err
	}
	// The proposal id is this command's request id, under the one rule
	// (see claim) but scoped to the task: the action's id derives from the
	// task and the proposal id, as the op_key a tool sees derives from it.
	// It is claimed once the proposal is known to be valid, so that an
	// agent told its parameters are wrong may fix them under the same id.
	if _, err := p.claimIn(ctx, requestid.ForProposal(principal, req.TaskId), "ProposeAction", req.TaskId, req.ProposalId, req); err != nil {
		return nil, false, err
	}
	actionID := d.action.ActionId
	t, existing, _, err := p.record(ctx, req.TaskId, d, "", func(t *stewardv1.Task) (bool, error) {
		if req.EditOf != "" && task.FindAction(t, req.EditOf) == nil {
			return false, errs.Field("edit_of", "task %s has no action %s", req.TaskId, req.EditOf)
		}
		if !task.Active(t.Status) {
			return false, errs.New(errs.FailedPrecondition, "task %s is %s; only a running task takes new actions", req.TaskId, task.StatusName(t.Status))
		}
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	if existing != nil {
		if existing.RequestHash != d.action.RequestHash {
			return nil, false, errs.New(errs.AlreadyExists, "proposal_id %s already proposed a different request (action %s)", errs.Quote(req.ProposalId), actionID)
		}
		if !proto.Equal(existing.RetryPolicy, d.action.RetryPolicy) {
			return nil, false, errs.New(errs.AlreadyExists, "proposal_id %s already proposed this request with a different retry_policy (action %s)", errs.Quote(req.ProposalId), actionID)
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
		return errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(req.TaskId))
	case req.Tool == "":
		return errs.Field("tool", "is required")
	case strings.HasPrefix(req.ProposalId, compensationPrefix):
		return errs.Field("proposal_id", "%s starts with %s, which is reserved for the compensations Steward proposes", errs.Quote(req.ProposalId), errs.Quote(compensationPrefix))
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
