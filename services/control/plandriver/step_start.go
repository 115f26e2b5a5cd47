package plandriver

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
	"github.com/steward-run/steward/pkg/taskstore"
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
	}
	return kindOf(step).start(r, ctx, st, step, outs)
}

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

// startSubTask starts sub_task step st: it records the id of the sub-task
// the step runs, which the next pass delegates (followSubTasks).
func (r *planPass) startSubTask(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step, _ map[string]plan.Outcome) error {
	return r.started(ctx, st, &stewardv1.PlanStepStarted{SubTaskId: planSubTaskID(r.taskID(), st.StepId, st.Attempts+1, -1)})
}

// startCheckpoint starts checkpoint step st: it asks once started
// (checkpoint.go).
func (r *planPass) startCheckpoint(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step, _ map[string]plan.Outcome) error {
	return r.started(ctx, st, &stewardv1.PlanStepStarted{})
}

// items is the list foreach step st runs over (EvalForeach); ok is false
// when it cannot be evaluated, which has failed the step.
func (r *planPass) items(ctx context.Context, st *stewardv1.PlanStepState, outs map[string]plan.Outcome) (items []any, ok bool, err error) {
	items, err = plan.EvalForeach(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs})
	if err != nil {
		return nil, false, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	}
	return items, true, nil
}

// startForeachSubTasks starts a foreach of sub-tasks: it records one
// sub-task id per item, each naming its item, which the next pass
// delegates as a sub_task step's. An empty list starts the step with
// nothing to run: it succeeds at once, its result [].
func (r *planPass) startForeachSubTasks(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step, outs map[string]plan.Outcome) error {
	items, ok, err := r.items(ctx, st, outs)
	if !ok {
		return err
	}
	ids := make([]string, 0, len(items))
	for i := range items {
		ids = append(ids, planSubTaskID(r.taskID(), st.StepId, st.Attempts+1, i))
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{ItemSubTaskIds: ids})
}

// startForeachActions starts a foreach of actions: one action per item,
// proposed as an action step's is, each under a proposal id naming its
// item, then one record of them all. A crash in the middle proposes the
// same again, which are the ones on the log. An empty list starts the
// step with nothing to run: it succeeds at once, its result [].
func (r *planPass) startForeachActions(ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step, outs map[string]plan.Outcome) error {
	items, ok, err := r.items(ctx, st, outs)
	if !ok {
		return err
	}
	body := step.GetForeach().GetBody()
	ids := make([]string, 0, len(items))
	for i, item := range items {
		target, params, err := plan.EvalParams(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs, Item: item})
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
	t, _, lerr := taskstore.LoadSince(ctx, r.d.cfg.Log, r.taskID(), r.seq)
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
		Milestone: r.definition(st.StepId).GetMilestoneId(),
	}, func(t *stewardv1.Task) bool { return stillPending(t, v, st) })
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
	return r.d.host.Write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindStep(t, st.StepId)
		if t.Plan.GetVersion() != start.Version || cur == nil || cur.Status != st.Status || cur.Attempts != st.Attempts {
			return nil, nil
		}
		for _, a := range actions {
			if task.FindAction(t, a) == nil {
				return nil, nil
			}
		}
		return r.d.host.Event(r.meta(id), start)
	})
}

// stillPending reports whether step st of plan version v still stands as
// read, to start, in a task whose plan may run.
func stillPending(t *stewardv1.Task, v uint32, st *stewardv1.PlanStepState) bool {
	cur := task.FindStep(t, st.StepId)
	return task.PlanMayRun(t) && t.Plan.Version == v && cur != nil &&
		task.StepStatus(t.Plan, cur) == stewardv1.StepStatus_STEP_STATUS_PENDING && cur.Status == st.Status && cur.Attempts == st.Attempts
}
