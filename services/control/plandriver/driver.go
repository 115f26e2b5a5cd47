package plandriver

import (
	"context"
	"strconv"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// The plan driver runs a task's plan (docs/plans.md, "Running a plan"): a
// durable reaction to every event that can move a plan — a version
// submitted or judged, an action's approval decided, its outcome, denial,
// withdrawal or settlement, a step started or ended, a task running again,
// a wait step's timer (wait.go), a sub-task's end (sub_task.go). Each
// pass reads the task and does
// what the plan asks next:
//
//  1. withdraws the actions the plan no longer asks for, unless permitted;
//  2. ends the running steps whose action (or items' actions) has ended,
//     whose sub-task (items' sub-tasks) has ended and given back its
//     unspent budget, or whose wait is over (pass.go; each kind follows its
//     own, kind.go), and
//     delegates a running step's sub-tasks not delegated yet;
//  3. applies the on_failure of a step that failed and stops the plan;
//  4. starts every ready step in the same pass — proposes its action, or
//     records the id of its sub-task, which step 2 of a later pass
//     delegates — so that independent steps run in parallel
//     (pass.go, kind.go);
//  5. ends the plan once every step is done.
//
// Steps 2 and 3 end a pass that does anything: the events they append
// bring the driver back to go on from there.
//
// Every write is idempotent: a step's action has a proposal id derived
// from the step and its canonical request (planProposalID), or is the
// action the task records for it (recordedProposal), and a step's
// sub-task an id derived from the step (planSubTaskID), recorded before it
// is delegated, so a crash between the proposal and the step's record, or
// between the record and the delegation, makes nothing twice; the
// step events' ids derive from the step, the plan version and the
// attempt; each write is conditional on the step still standing as read.

// Prefix starts the proposal id of every action the plan driver
// proposes, and the request id of every sub-task it delegates; clients
// may not use it (validateProposal, DelegateTask).
const Prefix = "plan-"

// Drive is one pass of the plan driver over the task rec is about.
func (d *Driver) Drive(ctx context.Context, rec *stewardv1.EventRecord) error {
	return d.drive(ctx, &planPass{d: d, seq: rec.Sequence, causeID: rec.Event.EventId, correlationID: rec.Event.CorrelationId}, rec.Event.TaskId)
}

// drive runs pass r over task taskID.
func (d *Driver) drive(ctx context.Context, r *planPass, taskID string) error {
	var moves bool
	err := d.cfg.Tasks.Peek(ctx, taskID, r.seq, func(t *stewardv1.Task) {
		moves = t.Plan != nil && !task.Terminal(t.Status)
	})
	if err != nil || !moves {
		return err // most tasks have no plan: no copy of the task for them
	}
	t, history, err := d.cfg.Tasks.LoadSince(ctx, taskID, r.seq)
	if err != nil {
		return err
	}
	if err := d.withdrawRetired(ctx, t); err != nil {
		return err
	}
	if !task.PlanMayRun(t) {
		return nil // governance holds the plan, or the task is stopped: what resumes it brings us back
	}
	r.t, r.history = t, history
	if moved, err := r.endSteps(ctx); err != nil || moved {
		return err
	}
	if moved, err := r.stopOnFailure(ctx); err != nil || moved {
		return err
	}
	if err := r.startReady(ctx); err != nil {
		return err
	}
	return r.finish(ctx)
}

// planPass is one pass of the driver over task t, read as of sequence
// seq (at least) of its log, because of event causeID (empty for a timer,
// timerID then naming the wait step's timer that fired).
type planPass struct {
	d                      *Driver
	seq                    uint64
	causeID, correlationID string
	timerID                string
	t                      *stewardv1.Task
	history                taskstore.History
	// outs is the outcome of each done step, read once a pass needs it.
	outs map[string]plan.Outcome
}

func (r *planPass) taskID() string { return r.t.Contract.GetTaskId() }

func (r *planPass) version() uint32 { return r.t.Plan.Version }

// definition returns the definition of step id in the plan in force.
func (r *planPass) definition(id string) *stewardv1.Step { return task.StepDefinition(r.t.Plan, id) }

// stepEventID is the id of a step event of type typ for the step's
// attempt under the plan version in force.
func (r *planPass) stepEventID(typ, step string, attempt uint32) string {
	return event.ID(r.taskID(), typ, step, strconv.FormatUint(uint64(r.version()), 10), strconv.FormatUint(uint64(attempt), 10))
}

// attemptEventID is the id of an event of type typ about what (a
// checkpoint's question, a failure's escalation) of the step's attempt,
// under any plan version: a revision that keeps the step does not ask or
// escalate again. A step's attempts never repeat across revisions
// (task.StepStatus; a step added back starts after its retired states').
func (r *planPass) attemptEventID(typ, what, step string, attempt uint32, more ...string) string {
	return event.ID(append([]string{r.taskID(), typ, what, step, strconv.FormatUint(uint64(attempt), 10)}, more...)...)
}

// meta is the envelope of an event the driver appends under id.
func (r *planPass) meta(id string) event.Meta {
	return event.Meta{
		ID:            id,
		TaskID:        r.taskID(),
		Actor:         r.d.host.Steward(),
		CausationID:   r.causeID,
		CorrelationID: r.correlationID,
	}
}

// outcomes returns what the done steps of the plan gave, as the Eval
// functions read it (result).
func (r *planPass) outcomes(ctx context.Context) (map[string]plan.Outcome, error) {
	if r.outs != nil {
		return r.outs, nil
	}
	outs := map[string]plan.Outcome{}
	for _, st := range r.t.Plan.Steps {
		switch st.Status {
		case stewardv1.StepStatus_STEP_STATUS_SUCCEEDED:
			result, err := r.result(ctx, st)
			if err != nil {
				return nil, err
			}
			outs[st.StepId] = plan.Outcome{Status: st.Status, Result: result}
		case stewardv1.StepStatus_STEP_STATUS_SKIPPED, stewardv1.StepStatus_STEP_STATUS_FAILED:
			outs[st.StepId] = plan.Outcome{Status: st.Status}
		}
	}
	r.outs = outs
	return outs, nil
}

// result is what succeeded step st gave: a checkpoint's answer or a
// sub-task step's result (subTaskResult, a list for a foreach of them),
// recorded on the step; a foreach's list of its items' results, an action
// step's action's result, a wait's null.
func (r *planPass) result(ctx context.Context, st *stewardv1.PlanStepState) (any, error) {
	if st.Result != nil {
		return st.Result.AsInterface(), nil
	}
	return kindOf(r.definition(st.StepId)).result(r, ctx, st)
}
