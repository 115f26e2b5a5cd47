package control_test

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"sync/atomic"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// TestReviewRevisionBetweenDelegationAndRecord: a revision lands between a
// sub_task step's delegation and the record that the step runs it (the
// record then finds another version and writes nothing). Version 2
// changes the still-pending step (another delegate). Its first attempt
// derives the same sub-task id (planSubTaskID has no hash of what is
// delegated), so version 2's step either fails "could not be delegated"
// or is handed version 1's sub-task; either way version 1's sub-task is
// orphaned, named by no step.
func TestReviewRevisionBetweenDelegationAndRecord(t *testing.T) {
	var (
		once   atomic.Bool
		r      *rig
		id     string
		revErr atomic.Value
	)
	r = newRig(t, control.AfterStepProposal(func(step string) error {
		if step != "sub" || !once.CompareAndSwap(false, true) {
			return nil
		}
		other := subStep("sub", nil, 100)
		other.GetSubTask().DelegateRef = "agent:other"
		tk, _, err := r.submitPlan(id, "", &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{other}})
		if err != nil {
			revErr.Store(err)
			return nil
		}
		r.Append(id, &stewardv1.PlanEvaluated{Version: tk.Plan.Version, PlanHash: tk.Plan.PlanHash,
			Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap-2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
		return nil
	}))
	id = r.planTask(t, "subrace", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{subStep("sub", nil, 100)}})
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool {
		st := task.FindStep(tk, "sub")
		return tk.Plan.GetVersion() == 2 && st != nil && st.Status != stewardv1.StepStatus_STEP_STATUS_PENDING
	})
	if err := revErr.Load(); err != nil {
		t.Fatalf("the revision: %v", err)
	}
	st := task.FindStep(tk, "sub")
	if st.Status != stepRunning {
		t.Fatalf("version 2's step is %v: %s", st.Status, st.Reason)
	}
	c := r.task(t, st.SubTaskId).Contract
	if to := c.DelegationChain[len(c.DelegationChain)-1].ToRef; to != "agent:other" {
		t.Fatalf("version 2's step runs sub-task %s, delegated to %s (version 1's), not agent:other", st.SubTaskId, to)
	}
}

// TestReviewSubTaskEndWakesBeforeItsRelease: docs/plans.md says a
// sub-task's end drives the parent's plan "after the sub-task's unspent
// budget has gone back to the parent". A sub-task cancelled with a call
// still out is released only when the call settles (release waits for
// it), but wakeParent runs at once: the step fails, on_failure continue
// starts the next step, whose delegation finds the budget still reserved
// and fails for good — though the budget comes back moments later.
func TestReviewSubTaskEndWakesBeforeItsRelease(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "subrelease", nil) // 1000 tokens
	first, second := subStep("first", nil, 600), subStep("second", []string{"first"}, 600)
	first.OnFailure = stewardv1.OnFailure_ON_FAILURE_CONTINUE
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{first, second}})
	child := r.subTaskOf(t, id, "first").Contract.TaskId
	ps, _ := structpb.NewStruct(map[string]any{})
	a, _, err := r.ctl.ProposeAction(context.Background(), "agent:sub", &stewardv1.ProposeActionRequest{TaskId: child, ProposalId: "c1", Tool: "search", Target: "x", Params: ps})
	if err != nil {
		t.Fatal(err)
	}
	r.dispatch(t, child, a.ActionId)
	if _, err := r.ctl.CancelTask(context.Background(), "agent", &stewardv1.CancelTaskRequest{TaskId: child, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	r.step(id, "first", stepFailed)
	r.finish(t, child, a.ActionId, succeeded(), []byte(`{}`), time.Now()) // the call settles: the 600 come back
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return task.FindStep(tk, "second").GetStatus() != stewardv1.StepStatus_STEP_STATUS_PENDING
	})
	if st := task.FindStep(tk, "second"); st.Status != stepRunning {
		t.Fatalf("second is %v: %s", st.Status, st.Reason)
	}
}

// TestReviewForeachRefusedMidwayOrphansItsSubTasks: a foreach of
// sub-tasks whose third item's delegation is refused for good (the
// parent's budget is short) fails the step — but the first two items'
// sub-tasks were delegated already, each holding its reservation, and no
// step state names them: they run on unrecorded in the plan, nothing
// follows or cancels them, and the receipt's plan does not show them.
func TestReviewForeachRefusedMidwayOrphansItsSubTasks(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "suborphan", nil) // 1000 tokens
	each := &stewardv1.Step{Id: "each", DependsOn: []string{"list"}, OnFailure: stewardv1.OnFailure_ON_FAILURE_CONTINUE,
		Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "steps.list.result.items", MaxItems: 3,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_SubTask{SubTask: subStep("", nil, 400).GetSubTask()}}}}}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		act("list", nil, "search", "index", nil), each,
	}})
	_, list := r.step(id, "list", stepRunning)
	r.ok(t, id, list, `{"items": ["a", "b", "c"]}`)
	tk, _ := r.step(id, "each", stepFailed)
	st := task.FindStep(tk, "each")
	if n := r.delegatedFrom(t, id); n != len(st.ItemSubTaskIds) {
		t.Fatalf("each failed (%s) naming sub-tasks %v, but %d were delegated and hold their budget", st.Reason, st.ItemSubTaskIds, n)
	}
}

// TestReviewChangedToSubTaskWhileRetrying: a revision changes a running
// action step into a sub_task step (a changed step keeps its state). Its
// action then fails transiently and the recovery policy retries it: the
// driver records the retry as the step's next attempt, but the fold
// checks PlanStepStarted against the step's current definition, a
// sub_task, and refuses a start naming an action. The refusal is
// permanent, the driver's reaction is set aside, and the step never
// moves, even once the retry succeeds.
func TestReviewChangedToSubTaskWhileRetrying(t *testing.T) {
	r := newRig(t)
	id := r.planTaskWith(t, "changed", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
	}})
	_, first := r.step(id, "a", stepRunning)
	r.runPlan(t, id, &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{subStep("a", nil, 100)}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Plan.Version == 2 && task.PlanMayRun(tk) })
	r.run(t, id, first.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	var retry *stewardv1.Action
	r.WaitTask(id, func(tk *stewardv1.Task) bool {
		for _, a := range tk.Actions {
			if a.RetryOf == first.ActionId {
				retry = a
			}
		}
		return retry != nil
	})
	r.ok(t, id, retry, `{}`)
	r.settle()
	if st := task.FindStep(r.task(t, id), "a"); st.Status == stepRunning {
		t.Fatalf("step a is still running on %v after its retry %s succeeded: the driver's start of the retry was refused", st.ActionIds, retry.ActionId)
	}
}
