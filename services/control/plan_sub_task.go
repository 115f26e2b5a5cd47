package control

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Sub-task steps (docs/plans.md, "Running a plan"): a sub_task step
// delegates a sub-task through the path DelegateTask takes (delegate), in
// the plan submitter's name, then records that the step runs it. The
// sub-task is a task of its own, with its own log: its delegate does the
// work and its acceptance owner accepts it. When it ends, a reaction to
// its end (wakeParent) drives the parent's plan, and the step ends as the
// sub-task did: accepted succeeds it, with result subTaskResult; failed or
// cancelled fails it. A foreach of sub-tasks delegates one per item.

// planSubTaskID is the id of the sub-task that an attempt of step of task
// taskID delegates (for its item, unless item is negative). It derives
// from them alone, so a crash or a redelivery between the delegation and
// the step's record finds the same sub-task, and a revision that keeps
// the step keeps it. No client's request id derives it: those ids derive
// from parts that start "task" (requestid.Scope.TaskID).
func planSubTaskID(taskID, step string, attempt uint32, item int) string {
	parts := []string{"plan-sub-task", taskID, step, strconv.FormatUint(uint64(attempt), 10)}
	if item >= 0 {
		parts = append(parts, "item", strconv.Itoa(item))
	}
	return event.ID(parts...)
}

// delegateOne delegates the sub-task of step st — of its item, unless
// item is negative — and returns its id. stop says the pass is to go no
// further with the step, as for proposeOne: a delegation refused for
// good (the parent's budget short, its credential revoked, a deadline
// past) fails the step in the refusal's words.
func (r *planPass) delegateOne(ctx context.Context, st *stewardv1.PlanStepState, s *stewardv1.SubTaskStep, item int) (id string, stop bool, err error) {
	what := "its sub-task"
	if item >= 0 {
		what = fmt.Sprintf("the sub-task of item %d", item)
	}
	now := r.p.now()
	// SubmitPlan checked the contract (checkSubTask); time has passed
	// since, and delegate checks it against the parent as it is now.
	err = validateClientContract(s.Contract, now)
	var contract *stewardv1.TaskContract
	if err == nil {
		contract, err = knownFieldsOnly(s.Contract) // a copy: delegate fills it in
	}
	h := handoff{
		childID:     planSubTaskID(r.taskID(), st.StepId, st.Attempts+1, item),
		requestID:   planProposalID(st.StepId, st.Attempts+1, item, "sub-task"),
		delegateRef: s.DelegateRef,
		contract:    contract,
	}
	if err == nil {
		_, _, err = r.p.delegate(ctx, r.t.Plan.SubmittedBy, r.t, h, now)
	}
	if hook := r.p.stepProposed; hook != nil && err == nil {
		err = hook(st.StepId)
	}
	if stop, err := r.refused(ctx, st, what, "delegated", err); stop || err != nil {
		return "", true, err
	}
	return h.childID, false, nil
}

// followSubTasks moves running step st on from its sub-task (or its
// items' sub-tasks) once they have ended: the first failed or cancelled
// fails the step at once; when all are accepted, the step's expect is
// checked on each result and the step records its result — the sub-task's
// (subTaskResult), or the list of the items', in order. A sub-task still
// running, produced and not yet accepted, or returned to its delegate
// leaves the step running.
func (r *planPass) followSubTasks(ctx context.Context, st *stewardv1.PlanStepState) (bool, error) {
	ids, items := st.ItemSubTaskIds, true
	if st.SubTaskId != "" {
		ids, items = []string{st.SubTaskId}, false
	}
	results := make([]any, len(ids))
	kept := make([]*structpb.Value, len(ids))
	done := true
	for i, id := range ids {
		child, _, err := taskstore.Load(ctx, r.p.log, id)
		if err != nil {
			return false, err
		}
		switch child.Status {
		case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
			if kept[i], err = structpb.NewValue(subTaskResult(child)); err != nil {
				return false, errs.Wrap(errs.Corrupt, err, "result of sub-task %s", id)
			}
			results[i] = kept[i].AsInterface()
		case stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
			failure := fmt.Sprintf("sub-task %s was %s: %s", id, task.StatusName(child.Status), clip(child.StatusReason))
			if items {
				failure = fmt.Sprintf("item %d: %s", i, failure)
			}
			return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, failure)
		default:
			done = false
		}
	}
	if !done {
		return false, nil
	}
	if items {
		return true, r.judgeItems(ctx, st, results, structpb.NewListValue(&structpb.ListValue{Values: kept}))
	}
	return true, r.judgeResult(ctx, st, results[0], "sub-task "+st.SubTaskId, kept[0])
}

// subTaskResult is what accepted sub-task t gives its step, as
// steps.<id>.result reads it: its id, its status, and its artifacts by
// reference — never their content, which stays where the artifact says.
func subTaskResult(t *stewardv1.Task) map[string]any {
	artifacts := make([]any, 0, len(t.Artifacts))
	for _, a := range t.Artifacts {
		artifacts = append(artifacts, map[string]any{
			"name": a.Name, "media_type": a.MediaType, "uri": a.Uri, "sha256": a.Sha256,
			"size_bytes": a.SizeBytes, "version": int64(a.Version),
		})
	}
	return map[string]any{
		"task_id":   t.Contract.GetTaskId(),
		"status":    task.StatusName(t.Status),
		"artifacts": artifacts,
	}
}

// delegatedBy reports whether step states of t's plan name sub-task id.
func delegatedBy(t *stewardv1.Task, id string) bool {
	for _, st := range t.Plan.GetSteps() {
		if st.SubTaskId == id {
			return true
		}
		for _, item := range st.ItemSubTaskIds {
			if item == id {
				return true
			}
		}
	}
	return false
}

// wakeParent reacts to the end of rec's task: if a step of its parent's
// plan delegated it, the parent's plan driver runs, and the step ends as
// the sub-task did. The reaction runs after release, so the budget the
// sub-task did not spend is back on the parent when its next step starts.
// rec's sequence is on the sub-task's log, not the parent's: as a floor
// for the parent's fold it only makes the driver read what is new.
func (p *Plane) wakeParent(ctx context.Context, rec *stewardv1.EventRecord) error {
	childID := rec.Event.TaskId
	var parentID string
	err := taskstore.Peek(ctx, p.log, childID, rec.Sequence, func(t *stewardv1.Task) {
		if task.Terminal(t.Status) {
			parentID = t.Contract.GetParentTaskId()
		}
	})
	if err != nil || parentID == "" {
		return err
	}
	var named bool
	if err := taskstore.Peek(ctx, p.log, parentID, rec.Sequence, func(t *stewardv1.Task) { named = delegatedBy(t, childID) }); err != nil || !named {
		return err // delegated by DelegateTask, or by a step a revision withdrew: nothing waits on it
	}
	return p.drive(ctx, &planPass{p: p, seq: rec.Sequence, causeID: rec.Event.EventId, correlationID: rec.Event.CorrelationId}, parentID)
}
