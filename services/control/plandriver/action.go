package plandriver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// startAction starts action step st: it proposes the action, then records
// that the step runs it.
func (r *planPass) startAction(ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step, outs map[string]plan.Outcome) error {
	target, params, err := plan.EvalParams(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs})
	if err != nil {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	}
	actionID, stop, err := r.proposeOne(ctx, st, step.GetAction(), target, params, -1)
	if stop || err != nil {
		return err
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{ActionId: actionID})
}

// proposeOne proposes an action of step st — of its item, unless item is
// negative — with target and params. stop says the pass is to go no
// further with the step: the moment passed, or the proposal was refused
// for good, which fails the step (a redelivery would meet the same
// refusal) unless it stopped the task (its action cap: the resume brings
// the driver back).
func (r *planPass) proposeOne(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.ActionStep, target string, params map[string]any, item int) (id string, stop bool, err error) {
	what := "its action"
	if item >= 0 {
		what = fmt.Sprintf("the action of item %d", item)
	}
	params, err = r.openLiterals(a, params)
	if stop, err := r.refused(ctx, st, what, "proposed", err); stop || err != nil {
		return "", true, err
	}
	if params == nil {
		params = map[string]any{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return "", true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("the parameters of %s are not JSON: %v", what, err))
	}
	id, err = r.propose(ctx, st, a, target, raw, item)
	if hook := r.d.cfg.StepProposed; hook != nil && err == nil && id != "" {
		err = hook(st.StepId)
	}
	if stop, err := r.refused(ctx, st, what, "proposed", err); stop || err != nil {
		return "", true, err
	}
	return id, id == "", nil
}

// refused says whether err, from starting what of step st (done, in
// words: "proposed"), stops the pass there. A refusal for good fails the
// step in its words — a redelivery would meet the same refusal — unless
// the plan may not run now (the task stopped, its action cap, say: what
// resumes it brings the driver back). Any other error is returned, and
// the event comes again.
func (r *planPass) refused(ctx context.Context, st *stewardv1.PlanStepState, what, done string, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if !eventlog.Permanent(err) {
		return true, err
	}
	t, _, lerr := r.d.cfg.Tasks.LoadSince(ctx, r.taskID(), r.seq)
	if lerr != nil || !task.PlanMayRun(t) {
		return true, lerr
	}
	return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, what+" could not be "+done+": "+err.Error())
}

// propose proposes the action of step st through the path ProposeAction
// takes (prepare, record), in the plan submitter's name, under the
// proposal id the task records for it (recordedProposal) or, the first
// time, planProposalID derives: if it is on the log already — a crash
// after the proposal, a revision that kept the step — that action is the
// step's. It returns the action's id, or "" when the moment passed
// (the task stopped, the step moved on).
func (r *planPass) propose(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.ActionStep, target string, params []byte, item int) (string, error) {
	taskID, v := r.taskID(), r.version()
	return r.d.host.Propose(ctx, r.t, Call{
		TaskID: taskID, CauseID: r.causeID,
		ProposalIDOf: func(h string) string {
			if id := recordedProposal(r.t, st.StepId, st.Attempts+1, item, h); id != "" {
				return id
			}
			return planProposalID(st.StepId, st.Attempts+1, item, h, func(h string) string { return r.d.host.Digest(taskID, h) })
		},
		PlanStep: st.StepId,
		Tool:     a.Tool, ToolVersion: a.ToolVersion, Target: target,
		Params: params, Retry: a.RetryPolicy, Rationale: a.Rationale, Principal: r.t.Plan.SubmittedBy,
		Milestone: r.definition(st.StepId).GetMilestoneId(), Decision: r.t.Plan.GetPlan().GetDecisionId(),
	}, func(t *stewardv1.Task) bool { return stillPending(t, v, st) })
}

// followAction follows running step st by its last action (follow).
func (r *planPass) followAction(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step) (bool, error) {
	a := task.FindAction(r.t, lastOf(st.ActionIds))
	if a == nil {
		return false, nil
	}
	return r.follow(ctx, st, a)
}

// follow moves running step st on from its action a, if a has ended: a
// success whose result meets the step's expect succeeds the step, one
// that does not fails it (a validation failure of the step); a failure
// the recovery policy retries keeps the step running, on the retry; any
// other end fails it. An action still under way — awaiting approval,
// dispatched, unknown until settled — leaves the step running.
func (r *planPass) follow(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.Action) (bool, error) {
	if retry := task.FindAction(r.t, r.d.host.RetryID(r.t, a)); retry != nil && a.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED {
		return true, r.started(ctx, st, &stewardv1.PlanStepStarted{ActionId: retry.ActionId})
	}
	switch succeeded, failure := r.ended(a); {
	case succeeded:
		return true, r.judge(ctx, st, a)
	case failure != "":
		return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, failure)
	}
	return false, nil
}

// ended says how action a stands for its step: succeeded, or failed for
// good (failure says how), or neither — under way, or failed and about
// to be proposed again by the recovery policy, whose proposal's end
// brings the driver back.
func (r *planPass) ended(a *stewardv1.Action) (succeeded bool, failure string) {
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		return true, ""
	case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
		if r.d.host.RetryDue(r.t, a) {
			return false, ""
		}
		class := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(a.Outcome.GetFailureClass().String(), "FAILURE_CLASS_")), "_", " ")
		return false, fmt.Sprintf("action %s failed (%s): %s", a.ActionId, class, task.Clip(a.Outcome.GetReason()))
	case stewardv1.ActionStatus_ACTION_STATUS_DENIED, stewardv1.ActionStatus_ACTION_STATUS_REJECTED, stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
		why := a.Outcome.GetReason()
		if why == "" {
			why = strings.Join(a.Snapshot.GetReasons(), "; ")
		}
		return false, fmt.Sprintf("action %s was %s: %s", a.ActionId, task.ActionStatusName(a.Status), task.Clip(why))
	}
	return false, ""
}

// latest is a's latest proposal: a itself, or the last of the retries the
// recovery policy made of it.
func (r *planPass) latest(a *stewardv1.Action) *stewardv1.Action {
	for a != nil {
		next := task.FindAction(r.t, r.d.host.RetryID(r.t, a))
		if next == nil {
			return a
		}
		a = next
	}
	return a
}

// lastOf is the last of ids, or "".
func lastOf(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1]
}

// planProposalID is the proposal id of the action of a step's attempt
// (of its item, for a foreach) for a request of requestHash, which keyed
// keys (secret.Sealer.Digest; nil, with no key, leaves it plain): the same
// start of the same step asking for the same call names the same action,
// across redeliveries and across revisions that keep the step before it
// started. A step redone after a revision (task.StepStatus) is a new
// attempt, with a new action. Keyed, because the action id derives from
// the proposal id and is shown to every reader of the task: over a plain
// request hash it would let one who may not read the request test guesses
// at its parameters (docs/results.md).
func planProposalID(step string, attempt uint32, item int, requestHash string, keyed func(string) string) string {
	id := planStepPrefix(step, attempt, item)
	if k := keyed(requestHash); k != "" {
		return id + k
	}
	return id + requestHash
}

// planStepPrefix starts the proposal id of a step's attempt (its item's).
func planStepPrefix(step string, attempt uint32, item int) string {
	id := Prefix + step + "-" + strconv.FormatUint(uint64(attempt), 10) + "-"
	if item >= 0 { // a foreach's: each item its own action, even where two ask the same
		id += "item" + strconv.Itoa(item) + "-"
	}
	return id
}

// recordedProposal is the proposal id of the action t records for a
// step's attempt (its item's) asking for the call of requestHash, or "":
// the driver recognises a step it proposed by what it recorded, not by
// deriving the id again — a log written before the ids were keyed, or
// under another key, names it otherwise.
func recordedProposal(t *stewardv1.Task, step string, attempt uint32, item int, requestHash string) string {
	prefix := planStepPrefix(step, attempt, item)
	for _, a := range t.Actions {
		rest, ok := strings.CutPrefix(a.ProposalId, prefix)
		if ok && a.PlanStepId == step && a.RequestHash == requestHash && (item >= 0 || !strings.HasPrefix(rest, "item")) {
			return a.ProposalId
		}
	}
	return ""
}

// actionResult is the result of the last action of step st: an action
// step's; a wait's null.
func (r *planPass) actionResult(ctx context.Context, st *stewardv1.PlanStepState) (any, error) {
	if len(st.ActionIds) == 0 {
		return nil, nil
	}
	return r.d.resultValue(ctx, task.FindAction(r.t, lastOf(st.ActionIds)))
}

// resultValue is a's result as encoding/json decodes it: nil for none, a
// string for a result that is not JSON (see resultJSON).
func (d *Driver) resultValue(ctx context.Context, a *stewardv1.Action) (any, error) {
	raw, err := d.host.ResultJSON(ctx, a)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "result of action %s", a.GetActionId())
	}
	return v, nil
}
