package control

import (
	"context"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control/plandriver"
)

// Limits on a proposal.
const (
	MaxTargetLen = plan.MaxTargetBytes // a plan's step says what a proposal may
	MaxParams    = 256 << 10
)

// ProposeAction checks a proposed tool call against the task and the tool,
// canonicalises and stores the request, derives the action's identities,
// and records the proposal. The action runs under the tool's retry policy,
// narrowed by the request's (see toolreg.NarrowRetry). With a proposal id it is
// idempotent: the same proposal again returns the same action with created
// false, and the proposal id on the task with another request or retry
// policy is AlreadyExists. A proposal id names one action on its task,
// whoever proposes it: the action's id, and the op_key a tool sees,
// derive from the task and the proposal id. It needs no request id claim
// of its own (see claimRequestID): the action on the task's log is the
// record, and a proposal refused for its parameters leaves the id free for
// the fixed one. The proposer's rationale is recorded with the action but
// is not part of its identity: a repeat with another rationale returns the
// action as first proposed.
func (p *Plane) ProposeAction(ctx context.Context, principal string, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, bool, error) {
	a, created, _, err := proposeAction(ctx, p, principal, req)
	return a, created, err
}

// proposeAction is p's ProposeAction, which also returns the sequence of
// the task as it wrote or read it with the action in it: where a wait for
// the action's outcome may start reading (Outcomes). A function, not a
// method: Plane has methods enough (pkg/arch).
func proposeAction(ctx context.Context, p *Plane, principal string, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, bool, uint64, error) {
	if p.tools == nil || p.requests == nil {
		return nil, false, 0, errs.New(errs.FailedPrecondition, "this control plane does not take actions")
	}
	if err := validateProposal(req); err != nil {
		return nil, false, 0, err
	}
	params, err := proposalParams(req)
	if err != nil {
		return nil, false, 0, err
	}
	// The versions a proposal may take are fixed when its task is created
	// (toolFor): any fold of the task this process holds has them, so one
	// already cached is taken without a read.
	t, _, err := p.loadStarted(ctx, req.TaskId)
	if err != nil {
		return nil, false, 0, err
	}
	if t, err = (fallbacks{p}).steer(ctx, t, req.Tool); err != nil { // fallback.go
		return nil, false, 0, err
	}
	d, err := p.prepare(ctx, t, proposalOf(req, principal, params, req.ToolVersion))
	if err != nil {
		return nil, false, 0, err
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
		return nil, false, 0, err
	}
	// t has the action: proposed by this call, or found there by a repeat;
	// an edit's withdrawal of the version it replaces comes after.
	seen := t.LastSequence
	if existing != nil && redrafted(existing, d.action, req) {
		d = (fallbacks{p}).asRecorded(ctx, t, proposalOf(req, principal, params, existing.ToolVersion), existing, d) // fallback.go
	}
	if existing != nil {
		d = preparedHeld(ctx, p, t, proposalOf(req, principal, params, existing.ToolVersion), existing, d) // secrets.go
		if err := sameProposal(existing, d.action, req); err != nil {
			return nil, false, 0, err
		}
		if req.EditOf != "" {
			// The first try may have stopped before it withdrew the
			// version it replaces.
			w, err := p.withdraw(ctx, principal, req.TaskId, req.EditOf, actionID)
			if err != nil {
				return nil, false, 0, err
			}
			seen = max(seen, w.GetLastSequence())
		}
		return existing, false, seen, nil
	}
	if req.EditOf != "" {
		if t, err = p.withdraw(ctx, principal, req.TaskId, req.EditOf, actionID); err != nil {
			return nil, false, 0, err
		}
		// The caller's own write includes the withdrawal.
		seen = max(seen, t.GetLastSequence())
	}
	return task.FindAction(t, actionID), true, seen, nil
}

// redrafted reports whether req, a repeat of the proposal that recorded
// existing, must be drafted again the way existing was before the two are
// compared: its fallback engaged or cleared in between, or the version of
// its tool changed (a newer one registered, a rollout rolled back) and the
// request named none — or named the primary's, which a fallback drops.
func redrafted(existing, a *stewardv1.Action, req *stewardv1.ProposeActionRequest) bool {
	if existing.FallbackId != a.FallbackId {
		return true
	}
	return existing.RequestHash != a.RequestHash && existing.Tool == a.Tool && existing.ToolVersion != a.ToolVersion &&
		(req.ToolVersion == "" || existing.FallbackId != "")
}

// proposalParams is the request's parameters as JSON: {} for none.
func proposalParams(req *stewardv1.ProposeActionRequest) ([]byte, error) {
	if req.Params == nil {
		return []byte("{}"), nil
	}
	params, err := protojson.Marshal(req.Params)
	if err != nil {
		return nil, errs.Field("params", "%v", err)
	}
	return params, nil
}

// proposalOf is the proposal req makes in principal's name, of the tool
// at toolVersion: the request's, or on a retry the version its first try
// resolved to.
func proposalOf(req *stewardv1.ProposeActionRequest, principal string, params []byte, toolVersion string) proposal {
	return proposal{
		taskID: req.TaskId, proposalID: req.ProposalId,
		tool: req.Tool, toolVersion: toolVersion, target: req.Target,
		params: params, retry: req.RetryPolicy, editOf: req.EditOf, principal: principal,
		rationale: req.Rationale, milestone: req.MilestoneId, decision: req.DecisionId,
		fallBack: true,
	}
}

// sameProposal refuses req, a repeat of the proposal that recorded
// existing, as AlreadyExists unless it proposes what existing is (its
// request as prepared, a): the same request, retry policy, edit and
// milestone.
func sameProposal(existing, a *stewardv1.Action, req *stewardv1.ProposeActionRequest) error {
	actionID := existing.ActionId
	switch {
	case existing.RequestHash != a.RequestHash:
		return errs.New(errs.AlreadyExists, "proposal_id %s already proposed a different request (action %s)", errs.Quote(req.ProposalId), actionID)
	case !proto.Equal(existing.RetryPolicy, a.RetryPolicy):
		return errs.New(errs.AlreadyExists, "proposal_id %s already proposed this request with a different retry_policy (action %s)", errs.Quote(req.ProposalId), actionID)
	case existing.EditOf != req.EditOf:
		return errs.New(errs.AlreadyExists, "proposal_id %s already proposed this request as an edit of %s, not of %s (action %s)",
			errs.Quote(req.ProposalId), errs.Quote(existing.EditOf), errs.Quote(req.EditOf), actionID)
	case existing.MilestoneId != req.MilestoneId:
		return errs.New(errs.AlreadyExists, "proposal_id %s already proposed this request in milestone %s, not %s (action %s)",
			errs.Quote(req.ProposalId), errs.Quote(existing.MilestoneId), errs.Quote(req.MilestoneId), actionID)
	case existing.DecisionId != req.DecisionId:
		return errs.New(errs.AlreadyExists, "proposal_id %s already proposed this request from decision %s, not %s (action %s)",
			errs.Quote(req.ProposalId), errs.Quote(existing.DecisionId), errs.Quote(req.DecisionId), actionID)
	}
	return nil
}

// withdraw closes an edited action that has not been permitted yet, so
// that nobody approves the old version by mistake. An action already
// permitted or further along stays as it is.
func (p *Plane) withdraw(ctx context.Context, principal, taskID, original, replacement string) (*stewardv1.Task, error) {
	return p.withdrawAction(ctx, principal, taskID, &stewardv1.ActionWithdrawn{ActionId: original, ReplacedBy: replacement})
}

// withdrawAction records w unless its action has been permitted or gone
// further. Its event id derives from the action and its replacement, so a
// repeat appends nothing.
func (p *Plane) withdrawAction(ctx context.Context, principal, taskID string, w *stewardv1.ActionWithdrawn) (*stewardv1.Task, error) {
	return p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if task.Withdrawable(task.FindAction(t, w.ActionId)) {
			return p.event(event.Meta{
				ID:     event.ID(taskID, event.TypeActionWithdrawn, w.ActionId, w.ReplacedBy),
				TaskID: taskID,
				Actor:  p.actor(principal),
			}, w)
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
	case strings.HasPrefix(req.ProposalId, plandriver.Prefix):
		return errs.Field("proposal_id", "%s starts with %s, which is reserved for the actions Steward proposes for the steps of a plan", errs.Quote(req.ProposalId), errs.Quote(plandriver.Prefix))
	case strings.HasPrefix(req.ProposalId, action.AmendmentPrefix):
		return errs.Field("proposal_id", "%s starts with %s, which is reserved for the amendments approvers make", errs.Quote(req.ProposalId), errs.Quote(action.AmendmentPrefix))
	case strings.HasPrefix(req.ProposalId, recoveryPrefix):
		return errs.Field("proposal_id", "%s starts with %s, which is reserved for the retries Steward proposes (RECOVERY_MODE_RETRY)", errs.Quote(req.ProposalId), errs.Quote(recoveryPrefix))
	}
	for _, err := range []error{
		checkText("proposal_id", req.ProposalId, MaxRequestID, false),
		checkText("tool", req.Tool, MaxRefLen, true),
		checkText("tool_version", req.ToolVersion, MaxRefLen, false),
		checkText("target", req.Target, MaxTargetLen, false),
		checkText("edit_of", req.EditOf, MaxRefLen, false),
		checkText("milestone_id", req.MilestoneId, MaxRefLen, false),
		checkText("decision_id", req.DecisionId, MaxRefLen, false),
		checkRationale(req.Rationale),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
