package control_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// subOwner accepts the sub-tasks of the plans below; agent:sub does them.
const subOwner = "user:owner"

// subStep is a sub_task step: agent:sub gets tokens of the parent's
// budget, to search, and subOwner accepts its work.
func subStep(id string, deps []string, tokens int64) *stewardv1.Step {
	c := validRequest("").Contract
	c.RiskTier, c.AllowedTools, c.Scopes = stewardv1.RiskTier_RISK_TIER_MEDIUM, []string{"search"}, []string{"docs:read"}
	c.Budget, c.AcceptanceOwnerRef = &stewardv1.Budget{MaxTokens: tokens}, subOwner
	return &stewardv1.Step{Id: id, DependsOn: deps, Kind: &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{Contract: c, DelegateRef: "agent:sub"}}}
}

// subTaskOf waits until step id runs and returns its sub-task.
func (r *harness) subTaskOf(t *testing.T, taskID, id string) *stewardv1.Task {
	t.Helper()
	tk, _ := r.step(taskID, id, stepRunning)
	return r.running(task.FindStep(tk, id).SubTaskId)
}

// delegatedFrom counts the sub-tasks delegated from taskID: each reserved
// its budget on it.
func (r *harness) delegatedFrom(t *testing.T, taskID string) int {
	t.Helper()
	return r.countWhere(t, taskID, func(ev *stewardv1.Event) bool {
		return strings.HasPrefix(ev.GetBudgetConsumed().GetSource(), "reserved for delegated task ")
	})
}

// finishSub does agent:sub's work on sub-task id — an artifact named name
// unless name is empty, then produced — and its owner accepts it.
func (r *harness) finishSub(t *testing.T, id, name string) {
	t.Helper()
	ctx := context.Background()
	if name != "" {
		if _, _, err := r.ctl.SubmitArtifact(ctx, "agent:sub", &stewardv1.SubmitArtifactRequest{TaskId: id, Name: name, MediaType: "text/plain", Content: []byte("found " + name)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.ctl.MarkProduced(ctx, "agent:sub", &stewardv1.MarkProducedRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.AcceptTask(ctx, subOwner, &stewardv1.AcceptTaskRequest{TaskId: id, Reason: "good"}); err != nil {
		t.Fatal(err)
	}
}

// TestPlanSubTaskRunsToProduced: a sub_task step delegates its sub-task
// once, in the submitter's name, under a request id clients may not use;
// a crash between the step's record and the delegation delegates it on
// redelivery, and a redelivery of the whole log delegates nothing again. The sub-agent's work is
// accepted, the step succeeds with the sub-task's result, a later step
// reads it, and the plan ends by marking the task produced.
func TestPlanSubTaskRunsToProduced(t *testing.T) {
	var calls atomic.Int32
	r := newHarness(t, control.AfterStepProposal(func(step string) error {
		if step == "sub" && calls.Add(1) == 1 {
			return errors.New("crash before delegating step " + step)
		}
		return nil
	}))
	id := r.planTask(t, "sub", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		subStep("sub", nil, 100),
		act("after", []string{"sub"}, "search", "index", map[string]string{"status": "steps.sub.result.status", "file": "steps.sub.result.artifacts[0].name"}),
	}})

	child := r.subTaskOf(t, id, "sub")
	c := child.Contract
	if c.ParentTaskId != id || c.DelegationChain[len(c.DelegationChain)-1].ToRef != "agent:sub" || child.CreatedBy != "agent" || c.Budget.GetMaxTokens() != 100 {
		t.Fatalf("sub-task %s: parent %s, chain %v, created by %s, budget %v", c.TaskId, c.ParentTaskId, c.DelegationChain, child.CreatedBy, c.Budget)
	}
	if calls.Load() < 2 || r.delegatedFrom(t, id) != 1 {
		t.Fatalf("hook ran %d times; %d sub-tasks delegated", calls.Load(), r.delegatedFrom(t, id))
	}
	r.redeliver(t)
	if r.delegatedFrom(t, id) != 1 || r.Count(id, event.TypePlanStepStarted) != 1 || r.Count(c.TaskId, event.TypeTaskCreated) != 1 {
		t.Fatal("a redelivery of the whole log delegated or started again")
	}
	// A client may not pick the plan's request ids.
	_, _, err := r.ctl.DelegateTask(context.Background(), "agent", &stewardv1.DelegateTaskRequest{ParentTaskId: id, Contract: subStep("x", nil, 1).GetSubTask().Contract, DelegateRef: "agent:sub", RequestId: "plan-sub-1-sub-task"})
	if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "request_id") {
		t.Fatalf("a client's request id in the plan's prefix: %v", err)
	}

	r.finishSub(t, c.TaskId, "notes.txt")
	tk, _ := r.step(id, "sub", stepSucceeded)
	res := task.FindStep(tk, "sub").Result.GetStructValue().AsMap()
	arts, _ := res["artifacts"].([]any)
	if res["task_id"] != c.TaskId || res["status"] != "accepted" || len(arts) != 1 || arts[0].(map[string]any)["name"] != "notes.txt" || arts[0].(map[string]any)["sha256"] == "" {
		t.Fatalf("the step's result = %v", res)
	}
	_, after := r.step(id, "after", stepRunning)
	if !strings.Contains(string(after.Request), `"status":"accepted"`) || !strings.Contains(string(after.Request), `"file":"notes.txt"`) {
		t.Fatalf("after's request = %s, want the sub-task's status and artifact", after.Request)
	}
	r.ok(t, id, after, `{}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
	r.redeliver(t)
	if r.delegatedFrom(t, id) != 1 || r.Count(id, event.TypeTaskProduced) != 1 || r.Count(id, event.TypePlanStepEnded) != 2 {
		t.Fatal("a redelivery of the whole log appended again")
	}
}

// TestPlanSubTaskEndsFail: a cancelled sub-task fails its step, naming
// it, and on_failure applies (continue: the plan goes on); a delegation
// refused for good — the parent's budget is short once a first sub-task
// reserved its part — fails its step in the refusal's words; an accepted
// sub-task whose result does not meet the step's expect fails it as a
// validation failure.
func TestPlanSubTaskEndsFail(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "subfail", nil)
	gone, short, thin := subStep("gone", nil, 600), subStep("short", nil, 600), subStep("thin", []string{"gone"}, 100)
	gone.OnFailure, short.OnFailure = stewardv1.OnFailure_ON_FAILURE_CONTINUE, stewardv1.OnFailure_ON_FAILURE_CONTINUE
	thin.Expect = "size(result.artifacts) > 0"
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{gone, short, thin}})

	tk, _ := r.step(id, "short", stepFailed)
	if why := task.FindStep(tk, "short").Reason; !strings.Contains(why, "could not be delegated") || !strings.Contains(why, "more than the 400") {
		t.Fatalf("short failed with %q", why)
	}
	child := r.subTaskOf(t, id, "gone")
	if _, err := r.ctl.CancelTask(context.Background(), "agent", &stewardv1.CancelTaskRequest{TaskId: child.Contract.TaskId, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	tk, _ = r.step(id, "gone", stepFailed)
	if why := task.FindStep(tk, "gone").Reason; !strings.Contains(why, child.Contract.TaskId) || !strings.Contains(why, "cancelled") {
		t.Fatalf("gone failed with %q", why)
	}

	thinChild := r.subTaskOf(t, id, "thin")
	r.finishSub(t, thinChild.Contract.TaskId, "")
	tk, _ = r.step(id, "thin", stepFailed)
	if why := task.FindStep(tk, "thin").Reason; !strings.Contains(why, "validation failure") || !strings.Contains(why, thinChild.Contract.TaskId) {
		t.Fatalf("thin failed with %q", why)
	}
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	if r.delegatedFrom(t, id) != 2 {
		t.Fatalf("%d sub-tasks delegated, want 2", r.delegatedFrom(t, id))
	}
}

// TestPlanForeachOfSubTasks: a foreach of sub-tasks delegates one per
// item, each its own; it succeeds when all are accepted, its result the
// list of their results in order, each checked by expect.
func TestPlanForeachOfSubTasks(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "subeach", nil)
	body := subStep("", nil, 100).GetSubTask()
	each := &stewardv1.Step{Id: "each", DependsOn: []string{"list"}, Expect: "result.status == 'accepted' && size(result.artifacts) == 1",
		Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "steps.list.result.items", MaxItems: 3,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_SubTask{SubTask: body}}}}}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("list", nil, "search", "index", nil), each,
		act("count", []string{"each"}, "search", "summary", map[string]string{"q": "steps.each.result[1].artifacts[0].name"}),
	}})
	_, list := r.step(id, "list", stepRunning)
	r.ok(t, id, list, `{"items": ["a", "b"]}`)

	tk, _ := r.step(id, "each", stepRunning)
	kids := task.FindStep(tk, "each").ItemSubTaskIds
	r.running(kids[0])
	r.running(kids[1])
	if len(kids) != 2 || kids[0] == kids[1] || r.delegatedFrom(t, id) != 2 {
		t.Fatalf("each delegated %v (%d reservations)", kids, r.delegatedFrom(t, id))
	}
	r.finishSub(t, kids[1], "b.txt")
	r.settle()
	if st := task.FindStep(r.task(t, id), "each"); st.Status != stepRunning {
		t.Fatalf("each is %v with one of two sub-tasks accepted", st.Status)
	}
	r.running(kids[0])
	r.finishSub(t, kids[0], "a.txt")
	tk, _ = r.step(id, "each", stepSucceeded)
	res := task.FindStep(tk, "each").Result.GetListValue().AsSlice()
	if len(res) != 2 || res[0].(map[string]any)["task_id"] != kids[0] || res[1].(map[string]any)["task_id"] != kids[1] {
		t.Fatalf("each's result = %v", res)
	}
	_, count := r.step(id, "count", stepRunning)
	if !strings.Contains(string(count.Request), `"q":"b.txt"`) {
		t.Fatalf("count's request = %s", count.Request)
	}
}

// TestPlanSubTaskRevision: a revision that keeps a running sub_task step
// keeps its sub-task — nothing is delegated again — and the sub-task's
// end ends the step under the new version; a withdrawn step's sub-task
// runs on, on the record, and its end moves no step.
func TestPlanSubTaskRevision(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "subrevise", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		subStep("keep", nil, 100), subStep("drop", nil, 100),
	}})
	kept, dropped := r.subTaskOf(t, id, "keep"), r.subTaskOf(t, id, "drop")

	r.runPlan(t, id, &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		subStep("keep", nil, 100), act("next", []string{"keep"}, "search", "index", map[string]string{"by": "steps.keep.result.task_id"}),
	}})
	r.settle()
	tk := r.task(t, id)
	if st := task.FindStep(tk, "keep"); tk.Plan.Version != 2 || st.SubTaskId != kept.Contract.TaskId || st.Status != stepRunning || r.delegatedFrom(t, id) != 2 {
		t.Fatalf("under version %d keep = %v, %d sub-tasks delegated", tk.Plan.Version, st, r.delegatedFrom(t, id))
	}
	if c := r.task(t, dropped.Contract.TaskId); c.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("the withdrawn step's sub-task is %v, want running on", c.Status)
	}
	ended := r.Count(id, event.TypePlanStepEnded)
	r.finishSub(t, dropped.Contract.TaskId, "")
	r.WaitTask(dropped.Contract.TaskId, func(c *stewardv1.Task) bool { return c.Status == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED })
	r.settle()
	if n := r.Count(id, event.TypePlanStepEnded); n != ended {
		t.Fatalf("the withdrawn step's sub-task's end moved a step: %d step ends, was %d", n, ended)
	}

	r.finishSub(t, kept.Contract.TaskId, "k.txt")
	_, next := r.step(id, "next", stepRunning)
	if !strings.Contains(string(next.Request), kept.Contract.TaskId) {
		t.Fatalf("next's request = %s, want the kept sub-task's id", next.Request)
	}
}

// TestPlanSubTaskRevisedBeforeItsDelegation: a sub_task step's start is
// recorded, naming its sub-task, before the sub-task is delegated. A
// revision that lands in between and changes the step (another delegate)
// finds it running under that id: the delegation, checked against the
// step as the reservation finds it, reads the plan again and delegates
// what version 2 asks, under the id on the record — nothing is orphaned
// and nothing collides.
func TestPlanSubTaskRevisedBeforeItsDelegation(t *testing.T) {
	var (
		once   atomic.Bool
		r      *harness
		id     string
		revErr atomic.Value
	)
	r = newHarness(t, control.AfterStepProposal(func(step string) error {
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
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Plan.GetVersion() == 2 })
	if err := revErr.Load(); err != nil {
		t.Fatalf("the revision: %v", err)
	}
	st := task.FindStep(tk, "sub")
	if st.Status != stepRunning || st.SubTaskId == "" {
		t.Fatalf("version 2's step is %v (%s), naming sub-task %q", st.Status, st.Reason, st.SubTaskId)
	}
	c := r.running(st.SubTaskId).Contract
	if to := c.DelegationChain[len(c.DelegationChain)-1].ToRef; to != "agent:other" {
		t.Fatalf("the step runs sub-task %s, delegated to %s, not agent:other", st.SubTaskId, to)
	}
	r.settle()
	if n := r.delegatedFrom(t, id); n != 1 {
		t.Fatalf("%d sub-tasks delegated, want 1", n)
	}
}

// TestPlanSubTaskEndWaitsForItsRelease: a sub-task cancelled with a call
// still out gives its unspent budget back only once the call settles
// (release waits for it), and its step ends only then: so the next
// step's delegation finds the budget back instead of failing for want
// of it.
func TestPlanSubTaskEndWaitsForItsRelease(t *testing.T) {
	r := newHarness(t)
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
	r.WaitTask(child, func(c *stewardv1.Task) bool { return c.Status == stewardv1.TaskStatus_TASK_STATUS_CANCELLED })
	r.settle()
	if st := task.FindStep(r.task(t, id), "first"); st.Status != stepRunning {
		t.Fatalf("first is %v (%s) while its sub-task's call is out and its budget reserved", st.Status, st.Reason)
	}
	r.finish(t, child, a.ActionId, succeeded(), []byte(`{}`), time.Now()) // the call settles: the 600 come back
	tk, _ := r.step(id, "first", stepFailed)
	if why := task.FindStep(tk, "first").Reason; !strings.Contains(why, "cancelled") {
		t.Fatalf("first failed with %q", why)
	}
	tk, _ = r.step(id, "second", stepRunning)
	if st := task.FindStep(tk, "second"); st.SubTaskId == "" {
		t.Fatalf("second runs no sub-task: %v", st)
	}
}

// TestPlanForeachOfSubTasksRefusedMidway: a foreach of sub-tasks records
// every item's sub-task before delegating any; the third item's
// delegation is refused for good (the task's budget is short), which
// fails the step in the refusal's words. The first two items' sub-tasks,
// delegated already, are named by the step and run on to their ends, as
// a failed foreach's other actions do; their unspent budget comes back
// when they end.
func TestPlanForeachOfSubTasksRefusedMidway(t *testing.T) {
	r := newHarness(t)
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
	if !strings.Contains(st.Reason, "item 2 could not be delegated") || len(st.ItemSubTaskIds) != 3 || r.delegatedFrom(t, id) != 2 {
		t.Fatalf("each failed (%s) naming %v, with %d sub-tasks delegated", st.Reason, st.ItemSubTaskIds, r.delegatedFrom(t, id))
	}
	used := tk.BudgetUsed.GetTokens()
	for _, kid := range st.ItemSubTaskIds[:2] {
		r.running(kid)
		if _, err := r.ctl.CancelTask(context.Background(), "agent", &stewardv1.CancelTaskRequest{TaskId: kid, Reason: "not needed"}); err != nil {
			t.Fatal(err)
		}
	}
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.BudgetUsed.GetTokens() == used-800 })
}
