package plandriver

import (
	"context"
	"fmt"
	"strconv"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
	"google.golang.org/protobuf/types/known/structpb"
)

// Sub-task steps (docs/plans.md, "Running a plan"): a sub_task step
// records the id of the sub-task it runs (planSubTaskID) when it starts,
// then a pass that finds the sub-task missing delegates it through the
// path DelegateTask takes (delegate), in the plan submitter's name. So
// every sub-task a step delegates is named on the record before it
// exists: a revision keeps it with the step or retires it with the step,
// never orphans it. The sub-task is a task of its own, with its own log:
// its delegate does the work and its acceptance owner accepts it. When it
// has ended and its unspent budget is back on the parent, the step ends
// as it did: accepted succeeds it, with result subTaskResult; failed or
// cancelled fails it. A foreach of sub-tasks runs one per item.

// planSubTaskID is the id of the sub-task that an attempt of step of task
// taskID runs (for its item, unless item is negative). It derives from
// them alone, fixed when the step's start is recorded, so a crash or a
// redelivery between that record and the delegation delegates the same
// sub-task, and a revision that keeps or changes the running step keeps
// it. It holds no hash of what is delegated: a revision that changes the
// step before its sub-task exists changes what is delegated, not the id
// the record names; each attempt has ids of its own. No client's request
// id derives it: those ids derive from parts that start "task"
// (requestid.Scope.TaskID).
func planSubTaskID(taskID, step string, attempt uint32, item int) string {
	parts := []string{"plan-sub-task", taskID, step, strconv.FormatUint(uint64(attempt), 10)}
	if item >= 0 {
		parts = append(parts, "item", strconv.Itoa(item))
	}
	return event.ID(parts...)
}

// delegateOne delegates sub-task childID of running step st — of its
// item, unless item is negative — as s, the step's definition in force,
// says. The delegation holds only while the step still stands as read
// (the reservation on the parent checks it): a revision since makes the
// pass read again and delegate what the plan in force says. stop says the
// pass is to go no further with the step, as for proposeOne: a
// delegation refused for good (the parent's budget short, its credential
// revoked, a deadline past) fails the step in the refusal's words.
func (r *planPass) delegateOne(ctx context.Context, st *stewardv1.PlanStepState, s *stewardv1.SubTaskStep, childID string, item int) (stop bool, err error) {
	what := "its sub-task"
	if item >= 0 {
		what = fmt.Sprintf("the sub-task of item %d", item)
	}
	if hook := r.d.cfg.StepProposed; hook != nil {
		if err := hook(st.StepId); err != nil {
			return true, err
		}
	}
	now, v := r.d.cfg.Now(), r.version()
	// SubmitPlan checked the contract (checkSubTask); time has passed
	// since, and Delegate checks it against the parent as it is now.
	err = r.d.host.Delegate(ctx, r.t.Plan.SubmittedBy, r.t, SubTask{
		ChildID:     childID,
		RequestID:   planStepPrefix(st.StepId, st.Attempts, item) + "sub-task",
		DelegateRef: s.GetDelegateRef(),
		Contract:    s.GetContract(),
		Still: func(parent *stewardv1.Task) error {
			if !stands(parent, v, st) {
				return errs.New(errs.Conflict, "plan step %s of task %s moved on since it was read; read it again", st.StepId, r.taskID())
			}
			return nil
		},
	}, now)
	return r.refused(ctx, st, what, "delegated", err)
}

// followSubTasks moves running step st on from its sub-task (or its
// items' sub-tasks): one not delegated yet is delegated (delegateOne); once
// they have ended and given back to the task what they did not spend
// (givenBack), the first failed or cancelled fails the step at once; when
// all are accepted, the step's expect is checked on each result and the
// step records its result — the sub-task's (subTaskResult), or the list
// of the items', in order. A sub-task still running, produced and not yet
// accepted, or returned to its delegate leaves the step running.
func (r *planPass) followSubTasks(ctx context.Context, st *stewardv1.PlanStepState) (bool, error) {
	ids, items := st.ItemSubTaskIds, true
	def := r.definition(st.StepId).GetForeach().GetBody().GetSubTask()
	if st.SubTaskId != "" {
		ids, items, def = []string{st.SubTaskId}, false, r.definition(st.StepId).GetSubTask()
	}
	results := make([]any, len(ids))
	kept := make([]*structpb.Value, len(ids))
	done := true
	for i, id := range ids {
		child, _, err := r.d.cfg.Tasks.Load(ctx, id)
		if errs.Is(err, errs.NotFound) {
			item := -1
			if items {
				item = i
			}
			if stop, err := r.delegateOne(ctx, st, def, id, item); stop || err != nil {
				return stop, err
			}
			done = false
			continue
		}
		if err != nil {
			return false, err
		}
		if task.Terminal(child.Status) {
			back, err := r.givenBack(ctx, id)
			if err != nil {
				return false, err
			}
			if !back {
				done = false
				continue
			}
		}
		switch child.Status {
		case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
			if kept[i], err = structpb.NewValue(subTaskResult(child)); err != nil {
				return false, errs.Wrap(errs.Corrupt, err, "result of sub-task %s", id)
			}
			results[i] = kept[i].AsInterface()
		case stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
			failure := fmt.Sprintf("sub-task %s was %s: %s", id, task.StatusName(child.Status), task.Clip(child.StatusReason))
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
	return true, r.judgeResult(ctx, st, results[0], "sub-task "+st.SubTaskId+" succeeded but its result", kept[0])
}

// givenBack reports whether ended sub-task childID has given back to the
// task what it reserved and did not spend, or has nothing to give: the
// task reserved nothing for it, its release is recorded, or it settled
// (no call still out) owing nothing. Until then its step waits, so that
// the next step's delegation finds the budget back; the release's
// BudgetReleased drives the plan on (reactions).
func (r *planPass) givenBack(ctx context.Context, childID string) (bool, error) {
	return r.d.host.GivenBack(ctx, r.taskID(), childID, r.history)
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

// WakeParent reacts to the end of rec's task, and to the calls still out
// when it ended settling: if a step of its parent's plan delegated it,
// the parent's plan driver runs, and the step ends as the sub-task did
// once its unspent budget is back on the parent (givenBack; the release
// itself drives the plan too). rec's sequence is on the sub-task's log,
// not the parent's: as a floor for the parent's fold it only makes the
// driver read what is new.
func (d *Driver) WakeParent(ctx context.Context, rec *stewardv1.EventRecord) error {
	childID := rec.Event.TaskId
	var parentID string
	err := d.cfg.Tasks.Peek(ctx, childID, rec.Sequence, func(t *stewardv1.Task) {
		if task.Terminal(t.Status) {
			parentID = t.Contract.GetParentTaskId()
		}
	})
	if err != nil || parentID == "" {
		return err
	}
	var named bool
	if err := d.cfg.Tasks.Peek(ctx, parentID, rec.Sequence, func(t *stewardv1.Task) { named = delegatedBy(t, childID) }); err != nil || !named {
		return err // delegated by DelegateTask, or by a step a revision withdrew: nothing waits on it
	}
	return d.drive(ctx, &planPass{d: d, seq: rec.Sequence, causeID: rec.Event.EventId, correlationID: rec.Event.CorrelationId}, parentID)
}

// startSubTask starts sub_task step st: it records the id of the sub-task
// the step runs, which the next pass delegates (followSubTasks).
func (r *planPass) startSubTask(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step, _ map[string]plan.Outcome) error {
	return r.started(ctx, st, &stewardv1.PlanStepStarted{SubTaskId: planSubTaskID(r.taskID(), st.StepId, st.Attempts+1, -1)})
}
