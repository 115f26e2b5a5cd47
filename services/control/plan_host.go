package control

import (
	"context"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/control/plandriver"
)

// planHost is the control plane as the plan driver sees it
// (plandriver.Host): a step's commands take the paths a client's take.
type planHost struct{ p *Plane }

var _ plandriver.Host = planHost{}

func (h planHost) Write(ctx context.Context, taskID string, build taskstore.Build) error {
	return h.p.write(ctx, taskID, build)
}

func (h planHost) Event(meta event.Meta, payload event.Payload) (*stewardv1.Event, error) {
	return h.p.event(meta, payload)
}

func (h planHost) Steward() *stewardv1.Actor { return h.p.actor(stewardPrincipal) }

func (h planHost) Propose(ctx context.Context, t *stewardv1.Task, c plandriver.Call, still func(*stewardv1.Task) bool) (id string, err error) {
	ctx, end := planStepSpan(ctx, h.p.log.Tracer(), t, c)
	defer func() { end(id, err) }()
	d, err := h.p.prepare(ctx, t, proposal{
		taskID: c.TaskID, proposalIDOf: c.ProposalIDOf, planStep: c.PlanStep, milestone: c.Milestone, decision: c.Decision,
		tool: c.Tool, toolVersion: c.ToolVersion, target: c.Target, params: c.Params,
		retry: c.Retry, rationale: c.Rationale, principal: c.Principal,
	})
	if err != nil {
		return "", err
	}
	recorded, _, _, err := h.p.record(ctx, c.TaskID, d, c.CauseID, func(t *stewardv1.Task) (bool, error) { return still(t), nil })
	if err != nil || task.FindAction(recorded, d.action.ActionId) == nil {
		return "", err
	}
	return d.action.ActionId, nil
}

func (h planHost) Delegate(ctx context.Context, principal string, parent *stewardv1.Task, s plandriver.SubTask, now time.Time) error {
	err := validateClientContract(s.Contract, now)
	var contract *stewardv1.TaskContract
	if err == nil {
		contract, err = knownFieldsOnly(s.Contract) // a copy: delegate fills it in
	}
	if err != nil {
		return err
	}
	_, _, err = h.p.delegation.delegate(ctx, principal, parent, handoff{
		childID: s.ChildID, requestID: s.RequestID, delegateRef: s.DelegateRef, contract: contract, still: s.Still,
	}, now)
	return err
}

// GivenBack: the sub-task's reservation is released, or it has settled
// (no call still out) owing nothing; until then its step waits, so that
// the next step's delegation finds the budget back, and the release's
// BudgetReleased drives the plan on (reactions).
func (h planHost) GivenBack(ctx context.Context, parentID, childID string, history taskstore.History) (bool, error) {
	reserved := reserveID(parentID, childID)
	if !history.Has(reserved) || history.Has(releaseID(parentID, childID)) {
		return true, nil
	}
	recs, err := h.p.log.Read(ctx, childID)
	if err != nil {
		return false, err
	}
	child, _, err := settled(recs, childID)
	if err != nil || child == nil {
		return false, err // a call still out: release waits for it
	}
	ev, err := commandEvent(ctx, h.p.log, parentID, reserved)
	if err != nil {
		return false, err
	}
	res, used := ev.GetBudgetConsumed(), child.BudgetUsed
	return owed(res.GetTokens(), used.GetTokens()) == 0 && owed(res.GetCostMicros(), used.GetCostMicros()) == 0, nil
}

func (h planHost) Produce(ctx context.Context, taskID, id string) error {
	_, _, err := h.p.acceptance.produce(ctx, stewardPrincipal, taskID, id, "", nil)
	return err
}

func (h planHost) Fail(ctx context.Context, taskID, id, reason string) error {
	_, err := h.p.end(ctx, stewardPrincipal, taskID, id, "", reason, stewardv1.TaskStatus_TASK_STATUS_FAILED, true)
	return err
}

func (h planHost) ResultJSON(ctx context.Context, a *stewardv1.Action) (json.RawMessage, error) {
	return h.p.recovery.resultJSON(ctx, a)
}

func (h planHost) RetryDue(t *stewardv1.Task, a *stewardv1.Action) bool {
	return h.p.recovery.retryDue(t, a)
}

func (h planHost) RetryID(t *stewardv1.Task, a *stewardv1.Action) string { return retryID(t, a) }

func (h planHost) Digest(taskID, hash string) string { return h.p.secrets.Digest(taskID, hash) }

func (h planHost) OpenParams(taskID string, params *structpb.Struct, sealed []*stewardv1.SealedSecret) (map[string]any, error) {
	return h.p.openParams(taskID, params, sealed)
}
