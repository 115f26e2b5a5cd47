package control

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

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
// cannot be evaluated, or a kind not built yet, fails it; an action step
// proposes its action and records that the step runs it.
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
	case step.GetAction() == nil:
		// Sub-tasks, checkpoints and foreach are refused at run time
		// until they are built (docs/plans.md).
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("%s steps do not run yet (not built yet)", kindName(step)))
	}
	target, params, err := plan.EvalParams(ctx, pl, id, plan.Bindings{Steps: outs})
	if err != nil {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	}
	if params == nil {
		params = map[string]any{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("its parameters are not JSON: %v", err))
	}
	actionID, err := r.propose(ctx, st, step.GetAction(), target, raw)
	if err != nil && eventlog.Permanent(err) {
		// A redelivery would meet the same refusal. If it stopped the
		// task (its action cap), the resume brings us back; else the step
		// fails, saying why.
		t, _, lerr := taskstore.LoadSince(ctx, r.p.log, r.taskID(), r.seq)
		if lerr != nil || !task.PlanMayRun(t) {
			return lerr
		}
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, "its action could not be proposed: "+err.Error())
	}
	if err != nil || actionID == "" {
		return err
	}
	if hook := r.p.stepProposed; hook != nil {
		if err := hook(st.StepId); err != nil {
			return err
		}
	}
	return r.started(ctx, st, actionID, nil, st.Attempts+1)
}

// propose proposes the action of step st through the path ProposeAction
// takes (prepare, record), in the plan submitter's name, under the
// proposal id planProposalID derives: if it is on the log already — a
// crash after the proposal, a revision that kept the step — that action
// is the step's. It returns the action's id, or "" when the moment passed
// (the task stopped, the step moved on).
func (r *planPass) propose(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.ActionStep, target string, params []byte) (string, error) {
	taskID, v := r.taskID(), r.version()
	d, err := r.p.prepare(ctx, r.t, proposal{
		taskID:       taskID,
		proposalIDOf: func(h string) string { return planProposalID(st.StepId, st.Attempts+1, h) },
		planStep:     st.StepId,
		tool:         a.Tool, toolVersion: a.ToolVersion, target: target,
		params: params, retry: a.RetryPolicy, principal: r.t.Plan.SubmittedBy,
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

// started records that step st runs action actionID — or, for a wait,
// waits until waitUntil — its attempt, while the step still stands as
// read and the action is on the log.
func (r *planPass) started(ctx context.Context, st *stewardv1.PlanStepState, actionID string, waitUntil *timestamppb.Timestamp, attempt uint32) error {
	v := r.version()
	id := r.stepEventID(event.TypePlanStepStarted, st.StepId, attempt)
	return r.p.write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindStep(t, st.StepId)
		if t.Plan.GetVersion() != v || cur == nil || cur.Status != st.Status || cur.Attempts != st.Attempts || (actionID != "" && task.FindAction(t, actionID) == nil) {
			return nil, nil
		}
		return r.p.event(r.meta(id), &stewardv1.PlanStepStarted{Version: v, StepId: st.StepId, ActionId: actionID, Attempt: attempt, WaitUntil: waitUntil})
	})
}

// stillPending reports whether step st of plan version v still stands as
// read, to start, in a task whose plan may run.
func stillPending(t *stewardv1.Task, v uint32, st *stewardv1.PlanStepState) bool {
	cur := task.FindStep(t, st.StepId)
	return task.PlanMayRun(t) && t.Plan.Version == v && cur != nil &&
		task.StepStatus(t.Plan, cur) == stewardv1.StepStatus_STEP_STATUS_PENDING && cur.Status == st.Status && cur.Attempts == st.Attempts
}

// kindName names the kind of step s, as docs/plans.md does.
func kindName(s *stewardv1.Step) string {
	switch s.GetKind().(type) {
	case *stewardv1.Step_SubTask:
		return "sub_task"
	case *stewardv1.Step_Checkpoint:
		return "checkpoint"
	case *stewardv1.Step_Wait:
		return "wait"
	case *stewardv1.Step_Foreach:
		return "foreach"
	}
	return "action"
}
