package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// startReady starts every step of the plan that may start now
// (pkg/plan.Ready), in plan order: each is proposed before any of them
// ends, so independent steps run in parallel.
func (r *planPass) startReady(ctx context.Context) error {
	for _, id := range plan.Ready(r.t.Plan.Plan, task.StepStatuses(r.t.Plan)) {
		if err := r.start(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// start starts ready step id: its when false skips it; an expression that
// cannot be evaluated fails it; an action step proposes its action and
// records that the step runs it; a sub_task step records the id of the
// sub-task it runs, which the next pass delegates (followSubTasks).
func (r *planPass) start(ctx context.Context, id string) error {
	pl, step, st := r.t.Plan.Plan, r.definition(id), task.FindStep(r.t, id)
	outs, err := r.outcomes(ctx)
	if err != nil {
		return err
	}
	run, err := plan.EvalWhen(ctx, pl, id, plan.Bindings{Steps: outs})
	switch {
	case err != nil:
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	case !run:
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_SKIPPED, "its when was false: "+step.When)
	case step.GetWait() != nil:
		return r.startWait(ctx, st, step.GetWait())
	case step.GetCheckpoint() != nil:
		return r.started(ctx, st, &stewardv1.PlanStepStarted{}) // it asks once started (plan_checkpoint.go)
	case step.GetForeach() != nil:
		return r.startForeach(ctx, st, step.GetForeach().GetBody(), outs)
	case step.GetSubTask() != nil:
		// Recorded before it is delegated (followSubTasks delegates it).
		return r.started(ctx, st, &stewardv1.PlanStepStarted{SubTaskId: planSubTaskID(r.taskID(), id, st.Attempts+1, -1)})
	}
	target, params, err := plan.EvalParams(ctx, pl, id, plan.Bindings{Steps: outs})
	if err != nil {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	}
	actionID, stop, err := r.proposeOne(ctx, st, step.GetAction(), target, params, -1)
	if stop || err != nil {
		return err
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{ActionId: actionID})
}

// startForeach starts foreach step st: its list (EvalForeach), then one
// action per item, proposed as an action step's is, each under a
// proposal id naming its item, then one record of them all. A crash in
// the middle proposes the same again, which are the ones on the log. A
// foreach of sub-tasks records one sub-task id per item, each naming its
// item, which the next pass delegates as a sub_task step's. An empty list
// starts the step with nothing to run: it succeeds at once, its result [].
func (r *planPass) startForeach(ctx context.Context, st *stewardv1.PlanStepState, body *stewardv1.StepTemplate, outs map[string]plan.Outcome) error {
	pl := r.t.Plan.Plan
	items, err := plan.EvalForeach(ctx, pl, st.StepId, plan.Bindings{Steps: outs})
	if err != nil {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	}
	ids := make([]string, 0, len(items))
	if body.GetSubTask() != nil {
		for i := range items {
			ids = append(ids, planSubTaskID(r.taskID(), st.StepId, st.Attempts+1, i))
		}
		return r.started(ctx, st, &stewardv1.PlanStepStarted{ItemSubTaskIds: ids})
	}
	for i, item := range items {
		target, params, err := plan.EvalParams(ctx, pl, st.StepId, plan.Bindings{Steps: outs, Item: item})
		if err != nil {
			return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("item %d: %v", i, err))
		}
		id, stop, err := r.proposeOne(ctx, st, body.GetAction(), target, params, i)
		if stop || err != nil {
			return err
		}
		ids = append(ids, id)
		if i+1 < len(items) {
			crashpoint.Here(crashpoint.DuringForeach)
		}
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{ItemActionIds: ids})
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
	if hook := r.p.stepProposed; hook != nil && err == nil && id != "" {
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
	t, _, lerr := r.p.tasks.LoadSince(ctx, r.taskID(), r.seq)
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
	d, err := r.p.prepare(ctx, r.t, proposal{
		taskID: taskID,
		proposalIDOf: func(h string) string {
			if id := recordedProposal(r.t, st.StepId, st.Attempts+1, item, h); id != "" {
				return id
			}
			return planProposalID(st.StepId, st.Attempts+1, item, h, func(h string) string { return r.p.secrets.Digest(taskID, h) })
		},
		planStep: st.StepId,
		tool:     a.Tool, toolVersion: a.ToolVersion, target: target,
		params: params, retry: a.RetryPolicy, rationale: a.Rationale, principal: r.t.Plan.SubmittedBy,
		milestone: r.definition(st.StepId).GetMilestoneId(),
	})
	if err != nil {
		return "", err
	}
	t, _, _, err := r.p.record(ctx, taskID, d, r.causeID, func(t *stewardv1.Task) (bool, error) {
		return stillPending(t, v, st), nil
	})
	if err != nil || task.FindAction(t, d.action.ActionId) == nil {
		return "", err
	}
	return d.action.ActionId, nil
}

// started records start, the next attempt of step st — its action, its
// items' actions, its sub-task (its items') or its wait's end — while the
// step still stands as read and its actions are on the log. Its
// sub-tasks are delegated once it is recorded (followSubTasks).
func (r *planPass) started(ctx context.Context, st *stewardv1.PlanStepState, start *stewardv1.PlanStepStarted) error {
	start.Version, start.StepId, start.Attempt = r.version(), st.StepId, st.Attempts+1
	id := r.stepEventID(event.TypePlanStepStarted, st.StepId, start.Attempt)
	actions := start.ItemActionIds
	if start.ActionId != "" {
		actions = []string{start.ActionId}
	}
	return r.p.write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindStep(t, st.StepId)
		if t.Plan.GetVersion() != start.Version || cur == nil || cur.Status != st.Status || cur.Attempts != st.Attempts {
			return nil, nil
		}
		for _, a := range actions {
			if task.FindAction(t, a) == nil {
				return nil, nil
			}
		}
		return r.p.event(r.meta(id), start)
	})
}

// stillPending reports whether step st of plan version v still stands as
// read, to start, in a task whose plan may run.
func stillPending(t *stewardv1.Task, v uint32, st *stewardv1.PlanStepState) bool {
	cur := task.FindStep(t, st.StepId)
	return task.PlanMayRun(t) && t.Plan.Version == v && cur != nil &&
		task.StepStatus(t.Plan, cur) == stewardv1.StepStatus_STEP_STATUS_PENDING && cur.Status == st.Status && cur.Attempts == st.Attempts
}
