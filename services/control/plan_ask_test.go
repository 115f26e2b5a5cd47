package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// TestPlanCheckpointAsksOnePerson: a checkpoint with an ask_ref asks that
// principal: the open question names them; another of the task's people
// is refused, PermissionDenied, with nothing appended; the asked one's
// answer ends the step, and an authenticated operator may answer in
// their place. A plan whose ask_ref names someone who may not answer the
// task's questions is refused whole.
func TestPlanCheckpointAsksOnePerson(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	id := r.planTaskWith(t, "ask-ref", func(c *stewardv1.TaskContract) { c.AccountableOwnerRef = "user:b" }, nil)
	ask := func(id string, deps ...string) *stewardv1.Step {
		return &stewardv1.Step{Id: id, DependsOn: deps, Expect: "result == 'approve'",
			Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Publish?", Choices: []string{"approve", "reject"}, AskRef: "user:b"}}}
	}
	stranger := ask("first")
	stranger.GetCheckpoint().AskRef = "user:z"
	var e *errs.Error
	if _, _, err := r.submitPlan(id, "", &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{stranger}}); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "plan.steps[0].checkpoint.ask_ref" {
		t.Fatalf("a checkpoint asking user:z: %v, want InvalidArgument on plan.steps[0].checkpoint.ask_ref", err)
	}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		ask("first"), ask("second", "first"),
	}})
	answer := func(who rpc.Identity) (*stewardv1.Task, error) {
		return r.ctl.ProvideInput(ctx, who, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "approve"})
	}
	waiting := func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT }

	tk := r.WaitTask(id, waiting)
	if got := tk.OpenInput.GetAskRef(); got != "user:b" {
		t.Fatalf("the open question asks %q, want user:b", got)
	}
	events := tk.EventCount
	for _, who := range []rpc.Identity{
		{Principal: "user:a"}, // the requester, whom the question does not ask
		{Principal: "user:a", Roles: []string{control.OperatorRole}}, // a role without a token is a claim, not a role
	} {
		_, err := answer(who)
		if !errs.Is(err, errs.PermissionDenied) || !strings.Contains(err.Error(), "user:a may not answer") || !strings.Contains(err.Error(), "user:b") {
			t.Fatalf("an answer by %v: %v, want PermissionDenied naming who is asked", who, err)
		}
	}
	if tk := r.task(t, id); tk.EventCount != events || !waiting(tk) {
		t.Fatalf("a refused answer appended: %d events, was %d; %s", tk.EventCount, events, tk.Status)
	}
	if _, err := answer(rpc.Identity{Principal: "user:b"}); err != nil {
		t.Fatal(err)
	}
	tk, _ = r.step(id, "first", stepSucceeded)
	if got := task.FindStep(tk, "first").GetResult().GetStringValue(); got != "approve" {
		t.Fatalf("first's result = %q", got)
	}

	r.WaitTask(id, waiting)
	if _, err := answer(rpc.Identity{Principal: "user:ops", Roles: []string{control.OperatorRole}, Verified: true}); err != nil {
		t.Fatalf("an operator's answer: %v", err)
	}
	r.step(id, "second", stepSucceeded)
}

// TestRequestInputAsksOnePerson: an agent's question may name whom it
// asks, the requester or the accountable owner; anyone else is
// InvalidArgument on ask_ref.
func TestRequestInputAsksOnePerson(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	id := r.planTaskWith(t, "ask-ref-agent", func(c *stewardv1.TaskContract) { c.AccountableOwnerRef = "user:b" }, nil)
	var e *errs.Error
	if _, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{TaskId: id, Question: "Go?", AskRef: "user:z"}); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "ask_ref" {
		t.Fatalf("a question for user:z: %v, want InvalidArgument on ask_ref", err)
	}
	tk, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{TaskId: id, Question: "Go?", AskRef: "user:a"})
	if err != nil || tk.OpenInput.GetAskRef() != "user:a" {
		t.Fatalf("a question for user:a: %v, open input %v", err, tk.GetOpenInput())
	}
	if _, err := r.ctl.ProvideInput(ctx, rpc.Identity{Principal: "user:b"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "yes"}); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("the accountable owner's answer to the requester's question: %v, want PermissionDenied", err)
	}
	if _, err := r.ctl.ProvideInput(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
}
