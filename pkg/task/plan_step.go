package task

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The plan driver's step events (services/control/plan_driver.go): a step
// of the plan in force started, naming its action or its sub-task, or
// ended. The fold
// checks each against the plan as it stands, so that a stale or repeated
// record cannot move a step twice: a step starts from pending, again for
// a retry of its own action, or afresh when it failed and a revision
// changed it since (StepStatus); it ends from running, or from pending
// when it never ran (skipped, or failed before its action was proposed).

const (
	stepSucceeded = stewardv1.StepStatus_STEP_STATUS_SUCCEEDED
	stepFailed    = stewardv1.StepStatus_STEP_STATUS_FAILED
	stepSkipped   = stewardv1.StepStatus_STEP_STATUS_SKIPPED
)

// stepStart checks that s may start its step now and returns the change.
func stepStart(t *stewardv1.Task, ev *stewardv1.Event, s *stewardv1.PlanStepStarted) (func(), error) {
	st, err := planStepOf(t, ev, s.Version, s.StepId)
	if err != nil {
		return nil, err
	}
	id := t.Contract.GetTaskId()
	a := FindAction(t, s.ActionId)
	def := StepDefinition(t.Plan, s.StepId)
	wait, foreach, checkpoint := def.GetWait() != nil, def.GetForeach() != nil, def.GetCheckpoint() != nil
	sub, subItems := def.GetSubTask() != nil, def.GetForeach().GetBody().GetSubTask() != nil
	delegates := s.SubTaskId != "" || len(s.ItemSubTaskIds) > 0
	switch {
	case sub && (s.SubTaskId == "" || s.ActionId != "" || s.WaitUntil != nil || len(s.ItemActionIds) > 0 || len(s.ItemSubTaskIds) > 0):
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is a sub_task: its start names its sub-task, and no action", ev.Type, s.StepId, id)
	case subItems && (s.SubTaskId != "" || s.ActionId != "" || s.WaitUntil != nil || len(s.ItemActionIds) > 0):
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is a foreach of sub-tasks: its start names the sub-task of each item, and no action", ev.Type, s.StepId, id)
	case !sub && !subItems && delegates:
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s delegates no sub-task", ev.Type, s.StepId, id)
	case checkpoint && (s.ActionId != "" || s.WaitUntil != nil || len(s.ItemActionIds) > 0):
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is a checkpoint: it runs no action", ev.Type, s.StepId, id)
	case wait && (s.ActionId != "" || s.WaitUntil == nil || len(s.ItemActionIds) > 0):
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is a wait: it runs no action, and its start says when it ends", ev.Type, s.StepId, id)
	case foreach && !subItems && (s.ActionId != "" || s.WaitUntil != nil || !ownActions(t, s.ItemActionIds)):
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is a foreach: its start names the action of each item, each on the task", ev.Type, s.StepId, id)
	case !wait && !foreach && !checkpoint && !sub && (a == nil || a.Compensates != "" || len(s.ItemActionIds) > 0):
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s has no action %s for step %s", ev.Type, id, s.ActionId, s.StepId)
	case s.Attempt != st.Attempts+1:
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s: attempt %d does not follow attempt %d", ev.Type, s.StepId, id, s.Attempt, st.Attempts)
	case StepStatus(t.Plan, st) == stepPending:
	case st.Status == stepRunning && a != nil && len(st.ActionIds) > 0 && a.RetryOf == st.ActionIds[len(st.ActionIds)-1]:
		// The recovery policy's retry of the step's action: the same step,
		// another attempt.
	default:
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is %s", ev.Type, s.StepId, id, StepStatusName(st.Status))
	}
	return func() {
		t.Plan = withStep(t.Plan, s.StepId, func(st *stewardv1.PlanStepState) {
			st.Status, st.Reason, st.Version, st.Attempts, st.WaitUntil, st.Result, st.EndedInVersion = stepRunning, "", s.Version, s.Attempt, s.WaitUntil, nil, 0
			st.ContractVersion = t.ContractVersion
			if s.ActionId != "" {
				st.ActionIds = append(slices.Clip(st.ActionIds), s.ActionId)
			}
			if foreach {
				// The items of this attempt, in order: what the step's
				// result is made of. An earlier attempt's stay in the ledger.
				st.ActionIds = slices.Clone(s.ItemActionIds)
			}
			// This attempt's sub-tasks; an earlier attempt's run on, on
			// their own logs.
			st.SubTaskId, st.ItemSubTaskIds = s.SubTaskId, slices.Clone(s.ItemSubTaskIds)
		})
		followLedger(t) // the step now owns its action in progress.remaining
	}, nil
}

// stepEnd checks that e may end its step now and returns the change.
func stepEnd(t *stewardv1.Task, ev *stewardv1.Event, e *stewardv1.PlanStepEnded) (func(), error) {
	st, err := planStepOf(t, ev, e.Version, e.StepId)
	if err != nil {
		return nil, err
	}
	var from []stewardv1.StepStatus
	switch e.Status {
	case stepSucceeded:
		from = []stewardv1.StepStatus{stepRunning}
	case stepSkipped:
		from = []stewardv1.StepStatus{stepPending}
	case stepFailed:
		from = []stewardv1.StepStatus{stepRunning, stepPending}
	default:
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s cannot end as %s", ev.Type, e.StepId, StepStatusName(e.Status))
	}
	if !slices.Contains(from, StepStatus(t.Plan, st)) {
		return nil, errs.New(errs.FailedPrecondition, "%s: step %s of task %s is %s; it cannot end as %s",
			ev.Type, e.StepId, t.Contract.GetTaskId(), StepStatusName(st.Status), StepStatusName(e.Status))
	}
	return func() {
		t.Plan = withStep(t.Plan, e.StepId, func(st *stewardv1.PlanStepState) {
			st.Status, st.Reason, st.Version, st.Result, st.EndedInVersion = e.Status, e.Reason, e.Version, e.Result, e.Version
		})
		followLedger(t)
	}, nil
}

// planStepOf returns the state of step id of t's plan in force, which must
// be version and may run.
func planStepOf(t *stewardv1.Task, ev *stewardv1.Event, version uint32, id string) (*stewardv1.PlanStepState, error) {
	taskID := t.Contract.GetTaskId()
	cur := t.Plan
	switch {
	case cur == nil:
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s has no plan", ev.Type, taskID)
	case version != cur.Version:
		return nil, errs.New(errs.FailedPrecondition, "%s: plan version %d is not task %s's plan in force, version %d", ev.Type, version, taskID, cur.Version)
	case !PlanRuns(cur):
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s's plan version %d is %s: none of it runs", ev.Type, taskID, cur.Version, PlanGovernanceName(cur.Governance))
	case Terminal(t.Status):
		return nil, illegal(t, "move a plan step of")
	}
	st := FindStep(t, id)
	if st == nil {
		return nil, errs.New(errs.FailedPrecondition, "%s: plan version %d of task %s has no step %s", ev.Type, version, taskID, errs.Quote(id))
	}
	return st, nil
}

// ownActions reports whether every id names an action of t's own (not a
// compensation).
func ownActions(t *stewardv1.Task, ids []string) bool {
	for _, id := range ids {
		if a := FindAction(t, id); a == nil || a.Compensates != "" {
			return false
		}
	}
	return true
}

// StepDefinition returns the definition of step id in p's plan, or nil.
func StepDefinition(p *stewardv1.PlanState, id string) *stewardv1.Step {
	for _, s := range p.GetPlan().GetSteps() {
		if s.GetId() == id {
			return s
		}
	}
	return nil
}

// withStep returns p with step id changed by change, on a copy: neither p
// nor its step states are changed in place.
func withStep(p *stewardv1.PlanState, id string, change func(*stewardv1.PlanStepState)) *stewardv1.PlanState {
	return withPlan(p, func(p *stewardv1.PlanState) {
		steps := slices.Clone(p.Steps)
		for i, s := range steps {
			if s.StepId == id {
				s = proto.CloneOf(s)
				change(s)
				steps[i] = s
			}
		}
		p.Steps = steps
	})
}

// StepStatusName returns s in words, e.g. "succeeded".
func StepStatusName(s stewardv1.StepStatus) string {
	return enumWords(s.String(), "STEP_STATUS_")
}

// StepStatus is where step state st of plan p stands for what runs next:
// its status, except that a step that failed and that a revision changed
// since (it keeps the version it failed under, older than p's) is pending
// again, to start afresh under its new definition. A succeeded step is
// never redone.
func StepStatus(p *stewardv1.PlanState, st *stewardv1.PlanStepState) stewardv1.StepStatus {
	if st.Status == stepFailed && st.Version < p.GetVersion() {
		return stepPending
	}
	return st.Status
}

// PlanMayRun reports whether the steps of t's plan may start now: t has a
// plan that governance lets run (PlanRuns) and t is active.
func PlanMayRun(t *stewardv1.Task) bool {
	return t.Plan != nil && PlanRuns(t.Plan) && Active(t.Status)
}
