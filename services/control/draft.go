package control

import (
	"context"
	"errors"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
	"google.golang.org/protobuf/proto"
)

// proposal is one tool call to propose. A client's ProposeAction and the
// compensation driver both describe their calls this way, so that both go
// through the same checks and derive the same identities.
type proposal struct {
	taskID, proposalID string
	// proposalIDOf, if set, gives the proposal id from the request hash,
	// for a proposer whose id names the request (the plan driver's).
	proposalIDOf func(requestHash string) string
	// planStep is the plan step the action runs, for the plan driver's.
	planStep string
	// milestone is the milestone of the contract's budget the action's
	// cost is charged to; the fold checks that the budget has it.
	milestone string
	// decision is the model decision that produced the proposal, if the
	// proposer named one; the fold checks that the task has it.
	decision          string
	tool, toolVersion string // toolVersion empty: the one the task takes (toolFor)
	target            string
	params            []byte                 // a JSON object
	retry             *stewardv1.RetryPolicy // the proposer's narrowing; nil for none
	editOf            string
	compensates       string // the action this one undoes
	principal         string
	// rationale is the proposer's case, recorded on the action and not
	// part of its hashes.
	rationale *stewardv1.ActionRationale
	// fallBack lets an engaged fallback's tool stand in (fallback.go): a
	// client's new proposal only, never the redo of an action (a retry,
	// an amendment, a compensation) or a plan step, whose ids and hashes
	// derive from the request they first made.
	fallBack bool
	// held are the sealed values of the action a retry redoes: a value
	// committed under an earlier secret key keeps that commitment, so the
	// request comes out the same across a key rotation (docs/keys.md).
	held []*stewardv1.SealedSecret
}

// draft is a proposal checked against its tool: the action to record and
// its canonical request, neither stored yet.
type draft struct {
	action    *stewardv1.Action
	canonical []byte
}

// prepare checks pr against its tool — schema, size, retry policy —
// canonicalises the request and derives the action's identities. Errors
// name the field of a ProposeActionRequest that is wrong.
func (p *Plane) prepare(ctx context.Context, t *stewardv1.Task, pr proposal) (*draft, error) {
	fb := redirect(t, &pr) // an engaged fallback's tool stands in (fallback.go)
	entry, rolloutID, err := p.toolFor(ctx, t, pr.tool, pr.toolVersion)
	if err != nil {
		return nil, err
	}
	if entry.Unusable != nil {
		c := entry.Tool.Contract
		return nil, errs.New(errs.FailedPrecondition, "tool %s version %s cannot be proposed: %v; register a new version", c.Name, c.Version, entry.Unusable)
	}
	if len(pr.params) > MaxParams {
		return nil, &errs.Error{Code: errs.TooLarge, Field: "params", Message: "are larger than 256 KiB"}
	}
	if err := entry.Schema.Validate(ctx, pr.params); err != nil {
		var v *action.Violation
		if errors.As(err, &v) {
			// The library quotes the value it refuses: never a secret one.
			return nil, errs.Field("params"+v.Path, "%s%s", secret.Redact(v.Reason, secretValues(entry, pr.params)), engagedNote(fb))
		}
		var e *errs.Error
		if errors.As(err, &e) { // a limit on the work of checking them
			return nil, &errs.Error{Code: e.Code, Field: "params", Message: e.Message}
		}
		return nil, errs.Field("params", "%v", err)
	}
	if err := checkModelParams(entry.Tool.Contract, pr.params); err != nil {
		return nil, err
	}
	tool := entry.Tool.Contract
	retry, err := toolreg.NarrowRetry("retry_policy.", tool, pr.retry)
	if err != nil {
		return nil, err
	}
	params, sealed, err := p.conceal(pr.taskID, entry, pr.params, pr.held)
	if err != nil {
		return nil, err
	}
	canonical, err := action.Canonical(action.Request{TaskID: pr.taskID, Tool: tool.Name, ToolVersion: tool.Version, Target: pr.target, Params: params})
	if err != nil {
		return nil, errs.Field("params", "%v", err)
	}
	requestHash := action.RequestHash(canonical)
	if pr.proposalIDOf != nil {
		pr.proposalID = pr.proposalIDOf(requestHash)
	}
	actionID := "act-" + event.RandomID()
	if pr.proposalID != "" {
		actionID = action.ID(pr.taskID, pr.proposalID)
	}
	return &draft{canonical: canonical, action: &stewardv1.Action{
		ActionId:      actionID,
		ProposalId:    pr.proposalID,
		Tool:          tool.Name,
		ToolVersion:   tool.Version,
		Target:        pr.target,
		EffectClass:   tool.EffectClass,
		RequestHash:   requestHash,
		ActionHash:    action.Hash(actionID, requestHash),
		OpKey:         action.OpKey(pr.taskID, actionID),
		ProposedBy:    pr.principal,
		EditOf:        pr.editOf,
		RetryPolicy:   retry,
		Compensates:   pr.compensates,
		Rationale:     proto.CloneOf(pr.rationale),
		SealedSecrets: sealed,
		PlanStepId:    pr.planStep,
		MilestoneId:   pr.milestone,
		DecisionId:    pr.decision,
		RolloutId:     rolloutID,
		FallbackOf:    fb.GetPrimary(),
		FallbackId:    fb.GetId(),
	}}, nil
}

// admission decides, from the task as it is when the proposal is about to
// be appended, whether it may go ahead: an error refuses it; false drops
// it without an error (the moment for it has passed).
type admission func(t *stewardv1.Task) (bool, error)

// record stores d's request (unless it is small enough to go inline) and
// appends its proposal, unless the task has
// the action already: then existing is that action and nothing is
// appended. appended says whether this call appended the proposal. Both
// kinds of proposal must name a tool the task allows; admit adds the
// checks of each kind.
func (p *Plane) record(ctx context.Context, taskID string, d *draft, causationID string, admit admission) (t *stewardv1.Task, existing *stewardv1.Action, appended bool, err error) {
	a := d.action
	// A small request travels inline in the proposal, covered by its
	// event's hash: no store round trip. A larger one is stored before the
	// proposal names it, and before the conditional append, which may run
	// its build again on a conflict: a proposal must never point at a
	// request that is not there. Should the proposal be refused or be a
	// repeat, the stored request is harmless — the store is by hash, and
	// the same request is the same entry.
	if action.Inline(len(d.canonical)) {
		a.Request = d.canonical
	} else if a.RequestRef, _, err = p.requests.Put(ctx, taskID, d.canonical); err != nil {
		return nil, nil, false, err
	}
	var capped *capStop
	t, err = p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		appended, capped = false, nil
		if found := task.FindAction(t, a.ActionId); found != nil {
			existing = proto.CloneOf(found) // the build's task is not ours to keep
			return nil, nil                 // a repeat of the proposal: nothing to append
		}
		if !toolpin.Allows(t.Contract.AllowedTools, a.Tool, a.ToolVersion) {
			return nil, errs.Field("tool", "%s is not among the tools task %s allows (%v)", errs.Quote(a.Tool), taskID, t.Contract.AllowedTools)
		}
		if a.FallbackId != "" && task.Engaged(t, a.FallbackId) == nil {
			// Cleared since the draft (the way back, or another replica):
			// recorded, it would run on the stand-in after the task went
			// back to its primary, under no engagement. Aborted: the
			// client's retry drafts it again, on the primary.
			return nil, errs.New(errs.Conflict, "fallback %s of task %s was cleared while this proposal was drafted; propose it again", errs.Quote(a.FallbackId), taskID)
		}
		if ok, err := admit(t); !ok || err != nil {
			return nil, err
		}
		if a.Compensates == "" && task.Active(t.Status) && task.AtActionCap(t) {
			// Refused, and the task stops for a person instead (actioncap.go).
			capped = p.capStop(t, causationID, a.ProposalId)
			return capped.event, capped.err
		}
		if a.Compensates == "" && task.Active(t.Status) && task.MilestoneAtCap(t, a.MilestoneId) {
			capped = milestoneCapStop(p, t, a.MilestoneId, "proposal", causationID, a.ProposalId) // milestone.go
			return capped.event, capped.err
		}
		appended = true
		proposer := a.ProposedBy
		if a.RetryOf != "" || a.PlanStepId != "" {
			// Steward's retry of the proposer's action, or its proposal
			// for a step of the proposer's plan.
			proposer = stewardPrincipal
		}
		return p.event(event.Meta{
			ID:            event.ID(taskID, event.TypeActionProposed, a.ActionId),
			TaskID:        taskID,
			Actor:         p.actor(proposer),
			CausationID:   causationID,
			CorrelationID: a.ProposalId,
		}, &stewardv1.ActionProposed{Action: a})
	})
	if err != nil {
		return nil, nil, false, err
	}
	if capped != nil {
		return nil, nil, false, capped.refusal
	}
	if appended {
		if a.Compensates != "" {
			crashpoint.Here(crashpoint.DuringCompensation)
		} else {
			crashpoint.Here(crashpoint.AfterProposal)
		}
	}
	return t, existing, appended, nil
}
